//! The call-tree runtime (family-based measurement): `c/knobs_calltree.c`, linked into
//! programs whose functions have enter/exit calls (`llvm::instrument`, one region per
//! function), built by [`build`], and the reader of the tree it writes at exit
//! ([`CallTree::read`]): one node per (caller node, function) with entries and self time,
//! recursion folded, and the cost of one enter/exit pair (the C file's header comment is the
//! full statement).
//!
//! Architecture invariant: like the other runtimes, libc only, never prints, writes nothing
//! when [`ENV_VAR`] is unset or empty.

use std::path::{Path, PathBuf};

use crate::{CFLAGS, Error};

/// The call-tree runtime's C source, compiled by [`build`].
pub const SOURCE: &str = include_str!("../c/knobs_calltree.c");

/// The environment variable naming the output file.
pub const ENV_VAR: &str = "KNOBS_CALL_TREE";

/// The first line of the output file.
pub const HEADER: &str = "knobs-call-tree 1";

/// Linker flags that pull the runtime out of its archive even when no function is
/// instrumented, so the file is still written.
pub const LINK_FLAGS: &[&str] = &["-Wl,-u,__knobs_region_enter"];

/// Compiles the runtime with `clang` into `out_dir/knobs-calltree-<hash>/libknobs_calltree.a`
/// and returns that path; a built library is reused.
pub fn build(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    crate::build_library(clang, out_dir, "calltree", SOURCE, CFLAGS)
}

/// [`build`]'s library with the test clock (`-DKNOBS_TEST_CLOCK`): time passes only through
/// the program's `__knobs_test_work(ns)` and the enter/exit calls' fixed costs (enter 3 + 5
/// ns, exit 7 + 9 ns around the clock read, calibration included; the C file's header), so
/// tests of the tree's accounting do not depend on the machine's speed or load.
pub fn build_test_clock(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    crate::build_test_clock_library(clang, out_dir, "calltree", SOURCE, CFLAGS)
}

/// [`build`]'s library with the count clock (`-DKNOBS_COUNT_CLOCK`, as
/// [`crate::build_counting`]): nodes are charged the program's own IR instructions, counted by
/// the code `llvm::instrument_counting` adds, not time.
pub fn build_counting(clang: &Path, out_dir: &Path) -> Result<PathBuf, Error> {
    let mut flags = CFLAGS.to_vec();
    flags.push(crate::COUNT_CLOCK_FLAG);
    crate::build_library(clang, out_dir, "calltree-counting", SOURCE, &flags)
}

/// One node of the call tree.
#[derive(Clone, Debug, PartialEq)]
pub struct CallNode {
    /// The caller's node (`None` for the root, node 0).
    pub parent: Option<usize>,
    /// The instrumenter's function id (`None` for the root: time outside every function).
    pub function: Option<u32>,
    pub entries: u64,
    /// Seconds charged to this node itself (its callees' time excluded).
    pub self_seconds: f64,
    /// Self time by the thread's CPU clock, in seconds; `None` when the runtime did not
    /// read it (`KNOBS_REGION_CPU_US=off`, an older runtime).
    pub cpu_seconds: Option<f64>,
}

/// What one run wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct CallTree {
    pub total: f64,
    /// Seconds one enter/exit pair costs (calibrated at exit).
    pub visit_overhead: f64,
    /// Seconds the calibration took (at exit, after `total`: part of the process's time,
    /// none of the program's).
    pub calibration: f64,
    /// Events from threads other than the traced one (ignored).
    pub other_threads: u64,
    /// Node 0 is the root; parents come before their children.
    pub nodes: Vec<CallNode>,
    /// The traced thread's CPU time from the runtime's start, when the CPU clock was read.
    pub cpu_total: Option<f64>,
    /// Reads of the CPU clock (long intervals only), and one read's calibrated cost (ns).
    pub cpu_reads: u64,
    pub cpu_read_ns: f64,
    /// The file says `unit instructions` ([`build_counting`]): `total` and every node's
    /// `self_seconds` are counts of the program's IR instructions, `visit_overhead` is 0.
    pub counted: bool,
}

impl CallTree {
    pub fn read(path: &Path) -> Result<CallTree, Error> {
        let text = std::fs::read_to_string(path).map_err(crate::io(path))?;
        let bad = |line: usize, message: String| Error::Format {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, HEADER)) => {}
            _ => return Err(bad(1, format!("the first line is not `{HEADER}`"))),
        }
        let mut tree = CallTree {
            total: 0.0,
            visit_overhead: 0.0,
            calibration: 0.0,
            other_threads: 0,
            nodes: Vec::new(),
            cpu_total: None,
            cpu_reads: 0,
            cpu_read_ns: 0.0,
            counted: false,
        };
        for (i, line) in lines {
            let n = i + 1;
            let fields: Vec<&str> = line.split_whitespace().collect();
            let number = |k: usize| -> Result<f64, Error> {
                fields
                    .get(k)
                    .and_then(|f| f.parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| bad(n, format!("field {k} is not a number: `{line}`")))
            };
            match fields.first() {
                Some(&"unit") if fields.get(1) == Some(&"instructions") => tree.counted = true,
                Some(&"total") => tree.total = number(1)?,
                Some(&"visit_overhead") => tree.visit_overhead = number(1)?,
                Some(&"calibration") => tree.calibration = number(1)?,
                Some(&"other_threads") => tree.other_threads = number(1)? as u64,
                Some(&"cpu_total") => tree.cpu_total = Some(number(1)?),
                Some(&"cpu_reads") => tree.cpu_reads = number(1)? as u64,
                Some(&"cpu_read_ns") => tree.cpu_read_ns = number(1)?,
                Some(&"cpu_interval_us") => {
                    number(1)?;
                }
                Some(&"node") if fields.len() == 6 || fields.len() == 7 => {
                    let id = number(1)? as usize;
                    if id != tree.nodes.len() {
                        return Err(bad(n, format!("node {id} out of order")));
                    }
                    let (parent, function) = match (fields[2], fields[3]) {
                        ("-", "-") if id == 0 => (None, None),
                        (p, f) => {
                            let p: usize = p
                                .parse()
                                .ok()
                                .filter(|p| *p < id)
                                .ok_or_else(|| bad(n, format!("bad parent `{p}`")))?;
                            let f: u32 = f
                                .parse()
                                .map_err(|_| bad(n, format!("bad function `{f}`")))?;
                            (Some(p), Some(f))
                        }
                    };
                    tree.nodes.push(CallNode {
                        parent,
                        function,
                        entries: number(4)? as u64,
                        self_seconds: number(5)?,
                        cpu_seconds: if fields.len() == 7 {
                            Some(number(6)?)
                        } else {
                            None
                        },
                    });
                }
                _ => return Err(bad(n, format!("unexpected line `{line}`"))),
            }
        }
        if tree.nodes.is_empty() {
            return Err(bad(1, "no root node".into()));
        }
        Ok(tree)
    }

    /// Each node's self time with the instrumentation's cost taken out (the paper's §5.1):
    /// half of every visit's enter/exit pair falls in the callee and half in its caller, so
    /// a node loses half a pair per entry of its own and per entry of each child; never
    /// below zero.
    pub fn corrected_self_seconds(&self) -> Vec<f64> {
        self.corrected(|n| n.self_seconds)
    }

    /// [`CallTree::corrected_self_seconds`] by the CPU clock (the visits run on a CPU, so
    /// they cost it the same); `None` without CPU times.
    pub fn corrected_cpu_seconds(&self) -> Option<Vec<f64>> {
        self.cpu_total?;
        if self.nodes.iter().any(|n| n.cpu_seconds.is_none()) {
            return None;
        }
        Some(self.corrected(|n| n.cpu_seconds.unwrap_or(0.0)))
    }

    fn corrected(&self, seconds: impl Fn(&CallNode) -> f64) -> Vec<f64> {
        let half = self.visit_overhead / 2.0;
        let mut visits: Vec<f64> = self.nodes.iter().map(|n| n.entries as f64).collect();
        visits[0] = 0.0;
        let mut charged = visits.clone();
        for (k, n) in self.nodes.iter().enumerate().skip(1) {
            if let Some(p) = n.parent {
                charged[p] += visits[k];
            }
        }
        self.nodes
            .iter()
            .zip(&charged)
            .map(|(n, c)| (seconds(n) - c * half).max(0.0))
            .collect()
    }

    /// The function ids from the root's child down to `node`.
    pub fn path(&self, mut node: usize) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(f) = self.nodes[node].function {
            out.push(f);
            node = self.nodes[node]
                .parent
                .expect("a non-root node has a parent");
        }
        out.reverse();
        out
    }
}
