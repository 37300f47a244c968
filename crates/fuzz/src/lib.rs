//! `fuzz`: knobs' parsers fed mutated inputs, on the stable toolchain (no `cargo fuzz`).
//!
//! Each [`Target`] is one parser as the command line calls it: the system spec, the space
//! formats (TOML, SPL Conqueror XML, DIMACS, dataset CSV), the model JSON, configuration
//! strings, sampling-strategy and learner strings, and constraint formulas. [`Mutator`]
//! derives inputs from the target's seeds (small built-in examples, plus files of the
//! target's kind under `examples/`): byte flips, insertions, splices, repeated chunks, deep
//! nesting and huge numbers, deterministically for a seed (ChaCha8).
//!
//! Anything but a clean `Ok` or `Err` is a crash: a panic, an abort, a stack overflow, a
//! hang past the time budget or an allocation past the memory limit. `knobs-fuzz` runs the
//! inputs in a child process that writes each input to a file before parsing it, so a crash
//! that kills the child is still caught and its input saved under
//! `crates/fuzz/regressions/<target>/`; `tests/regressions.rs` runs every saved input on
//! each `cargo test`, and a short bounded fuzz run too.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One parser under test.
pub struct Target {
    pub name: &'static str,
    /// File extensions under `examples/` that make good seeds.
    pub extensions: &'static [&'static str],
    /// Built-in seeds.
    pub seeds: &'static [&'static str],
    /// Parses the input; any result is fine, a panic is not.
    pub run: fn(&str),
}

fn space_for_configurations() -> space::ConfigSpace {
    let mut s = space::ConfigSpace::new("fuzz");
    s.add_binary("fast", None, false).expect("a name");
    s.add_numeric("level", &[1.0, 6.0, 9.0]).expect("values");
    s.add_numeric("threads", &[1.0, 2.0]).expect("values");
    s
}

/// Every parser that reads user input.
pub const TARGETS: &[Target] = &[
    Target {
        name: "system-spec",
        extensions: &["toml"],
        seeds: &[
            "name = \"x\"\n[run]\nprogram = \"sleep\"\nargs = [\"{options}\"]\ntimeout = 5\n[measure]\nrepetitions = 2\n[[workload]]\nname = \"w\"\n[[option]]\nname = \"a\"\non = [\"1\"]\n[[option]]\nname = \"n\"\nvalues = [1, 2]\narg = [\"-{value}\"]\n",
        ],
        run: |text| {
            let _ = measure::SystemSpec::parse(text, Path::new("/nonexistent/knobs.toml"));
        },
    },
    Target {
        name: "space-toml",
        extensions: &["toml"],
        seeds: &[
            "name = \"s\"\nconstraints = [\"a => !b\"]\n[[option]]\nname = \"a\"\n[[option]]\nname = \"b\"\n[[option]]\nname = \"l\"\nvalues = [1, 5, 9]\n[[group]]\nkind = \"alternative\"\nmembers = [\"a\", \"b\"]\n",
        ],
        run: |text| {
            let _ = space::formats::spec::parse_spec(text, "fuzz.toml");
        },
    },
    Target {
        name: "splconqueror-xml",
        extensions: &["xml"],
        seeds: &[
            "<vm name=\"x\"><binaryOptions><configurationOption><name>root</name><outputString>root</outputString><prefix></prefix><postfix></postfix><parent></parent><impliedOptions/><excludedOptions/><optional>False</optional></configurationOption><configurationOption><name>a</name><parent>root</parent><optional>True</optional></configurationOption></binaryOptions><numericOptions><configurationOption><name>n</name><minValue>1</minValue><maxValue>4</maxValue><stepFunction>n * 2</stepFunction></configurationOption></numericOptions><booleanConstraints><constraint>a | !a</constraint></booleanConstraints></vm>",
        ],
        run: |text| {
            let _ = space::formats::splconqueror::parse_variability_model(text, "fuzz.xml");
        },
    },
    Target {
        name: "dimacs",
        extensions: &["dimacs", "cnf"],
        seeds: &["c 1 root\nc 2 a\nc 3 b\np cnf 3 2\n1 0\n-2 -3 0\n"],
        run: |text| {
            let _ = space::formats::dimacs::parse_dimacs(text, "fuzz.dimacs");
        },
    },
    Target {
        name: "dataset-csv",
        extensions: &["csv"],
        seeds: &["a,b,level,PERF\n0,1,6,1.5\n1,0,9,2.25\n0,0,1,0.75\n"],
        run: |text| {
            let _ = space::formats::dataset::parse_dataset_csv(text, "fuzz.csv");
        },
    },
    Target {
        name: "model-json",
        extensions: &["json"],
        seeds: &[
            "{\"format\":\"knobs-model\",\"version\":1,\"terms\":[{\"options\":[],\"value\":1},{\"options\":[\"A\",\"level=6\"],\"value\":3}],\"regions\":[{\"id\":\"r0\",\"options\":[\"A\"],\"terms\":[]}]}",
        ],
        run: |text| {
            if let Ok(m) = model::ModelFile::from_json(text, "fuzz.json") {
                let _ = m.bind(&["A", "level"]);
            }
        },
    },
    Target {
        name: "configuration",
        extensions: &[],
        seeds: &["fast,level=6,threads=2", "level=9 threads=1"],
        run: |text| {
            let _ = space_for_configurations().parse_configuration(text);
        },
    },
    Target {
        name: "formula",
        extensions: &[],
        seeds: &["a => !b", "(a && b) || !(c <=> level=6)", "!!a"],
        run: |text| {
            let _ = space::Formula::parse(text);
        },
    },
    Target {
        name: "sample-strategy",
        extensions: &[],
        seeds: &[
            "pairwise",
            "random:50",
            "twise:3",
            "distance:8",
            "all",
            "featurewise",
        ],
        run: |text| {
            let _ = text.parse::<space::Strategy>();
        },
    },
    Target {
        name: "learner",
        extensions: &[],
        seeds: &[
            "stepwise:log",
            "rf:trees=10,mtry=3",
            "lasso:degree=2",
            "stepwise+rf:trees=5",
        ],
        run: |text| {
            let _ = text.parse::<learn::Learner>();
        },
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The workspace root (two levels above this crate).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The target's seeds: built-in ones and files of its kind under `examples/` (small ones).
pub fn seeds(target: &Target) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = target.seeds.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut stack = vec![workspace().join("examples")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "build") {
                    stack.push(path);
                }
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| target.extensions.contains(&e))
                && path.metadata().is_ok_and(|m| m.len() < 64 * 1024)
                && let Ok(bytes) = std::fs::read(&path)
            {
                out.push(bytes);
            }
        }
    }
    out
}

/// Derives inputs from seeds, deterministically for a seed.
pub struct Mutator {
    rng: ChaCha8Rng,
    seeds: Vec<Vec<u8>>,
}

/// Fragments that exercise limits: nesting, huge and odd numbers, repeats, odd characters.
const FRAGMENTS: &[&str] = &[
    "((((((((((",
    "!!!!!!!!!!",
    " => a",
    " <=> b",
    "18446744073709551615",
    "9007199254740993",
    "-0",
    "1e308",
    "1e-320",
    "nan",
    "inf",
    "\u{0}",
    "\u{feff}",
    "é",
    "\n",
    "\r\n",
    "\"",
    "'",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    ";",
    "<",
    ">",
    "</",
    "&amp;",
    "p cnf ",
    "c ",
    "0\n",
    "level=",
    "trees=",
    "degree=",
    ":",
    "+",
    "999999999999",
];

impl Mutator {
    pub fn new(seeds: Vec<Vec<u8>>, seed: u64) -> Mutator {
        Mutator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            seeds,
        }
    }

    /// The next input: a seed with one to four mutations.
    pub fn next_input(&mut self) -> Vec<u8> {
        let k = self.rng.gen_range(0..self.seeds.len().max(1));
        let mut input = self.seeds.get(k).cloned().unwrap_or_default();
        for _ in 0..self.rng.gen_range(1..=4) {
            self.mutate(&mut input);
        }
        input
    }

    fn mutate(&mut self, input: &mut Vec<u8>) {
        let at = |rng: &mut ChaCha8Rng, len: usize| rng.gen_range(0..=len);
        match self.rng.gen_range(0..8) {
            0 if !input.is_empty() => {
                let i = self.rng.gen_range(0..input.len());
                input[i] ^= 1 << self.rng.gen_range(0..8);
            }
            1 if !input.is_empty() => {
                let i = self.rng.gen_range(0..input.len());
                let n = self.rng.gen_range(1..=16).min(input.len() - i);
                input.drain(i..i + n);
            }
            2 => {
                let f = FRAGMENTS[self.rng.gen_range(0..FRAGMENTS.len())];
                let i = at(&mut self.rng, input.len());
                input.splice(i..i, f.bytes());
            }
            3 => {
                // Deep nesting or long repetition of one fragment.
                let f = FRAGMENTS[self.rng.gen_range(0..FRAGMENTS.len())];
                let times = [10, 100, 1000, 10_000][self.rng.gen_range(0..4)];
                let i = at(&mut self.rng, input.len());
                let chunk: Vec<u8> = f.bytes().cycle().take(f.len() * times).collect();
                input.splice(i..i, chunk);
            }
            4 if !input.is_empty() => {
                // Repeat a chunk of the input itself.
                let i = self.rng.gen_range(0..input.len());
                let n = self.rng.gen_range(1..=64).min(input.len() - i);
                let chunk = input[i..i + n].to_vec();
                let j = at(&mut self.rng, input.len());
                input.splice(j..j, chunk);
            }
            5 if !self.seeds.is_empty() => {
                // Splice in part of another seed.
                let other = &self.seeds[self.rng.gen_range(0..self.seeds.len())];
                if !other.is_empty() {
                    let i = self.rng.gen_range(0..other.len());
                    let n = self.rng.gen_range(1..=128).min(other.len() - i);
                    let chunk = other[i..i + n].to_vec();
                    let j = at(&mut self.rng, input.len());
                    input.splice(j..j, chunk);
                }
            }
            6 => {
                // A random byte, printable or not.
                let b: u8 = self.rng.r#gen();
                let i = at(&mut self.rng, input.len());
                input.insert(i, b);
            }
            _ => {
                // Replace a number with an extreme one.
                if let Some(i) = input.iter().position(|b| b.is_ascii_digit()) {
                    let f = ["18446744073709551615", "0", "-1", "100000000", "1e300"]
                        [self.rng.gen_range(0..5)];
                    input.splice(i..i + 1, f.bytes());
                }
            }
        }
        input.truncate(1 << 20);
    }
}

/// Runs one input through a target, as text (invalid UTF-8 is read lossily, as the CLI's
/// file readers would reject it before parsing).
pub fn run_input(target: &Target, input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    (target.run)(&text);
}

/// The directory of a target's saved crash inputs.
pub fn regressions_dir(target: &Target) -> PathBuf {
    workspace()
        .join("crates/fuzz/regressions")
        .join(target.name)
}
