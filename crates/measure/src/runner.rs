//! Runs a program once and measures it: wall, user and system time and peak resident set
//! size. The program is started directly (never through a shell, so option values cannot
//! inject commands) in its own process group, which a timeout kills as a whole.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::spec::{Invocation, Metric};

/// How much of standard error is kept for a failed run.
pub const STDERR_TAIL_BYTES: usize = 2048;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    /// Exit status 0.
    Ok,
    /// A non-zero exit status.
    Exit(i32),
    /// Killed by a signal (a crash, or killed from outside).
    Signal(i32),
    /// Ran past the timeout; the process group was killed.
    Timeout,
    /// Could not be started (the cause).
    SpawnFailed(String),
    /// The program of its configuration's build options did not build (how, and its log).
    BuildFailed(String),
}

impl Outcome {
    pub fn is_ok(&self) -> bool {
        *self == Outcome::Ok
    }

    /// The status column of the results store.
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Timeout => "timeout",
            _ => "failed",
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Exit(code) => format!("exit status {code}"),
            Outcome::Signal(sig) => format!("killed by signal {sig} ({})", signal_name(*sig)),
            Outcome::Timeout => "timed out".into(),
            Outcome::SpawnFailed(why) => format!("could not start: {why}"),
            Outcome::BuildFailed(why) => format!("build failed: {why}"),
        }
    }
}

pub(crate) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// One run's measurements.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunResult {
    pub outcome: Outcome,
    /// Seconds from start to exit.
    pub wall: f64,
    /// CPU seconds in user and kernel mode (the program and the children it waited for).
    pub user: f64,
    /// Kept as `system` in the Slurm spool's result files.
    #[serde(rename = "system")]
    pub system_cpu_s: f64,
    /// Seconds the program was ready to run but waited for a CPU (the kernel's run delays of
    /// its threads, `/proc/PID/task/*/schedstat`, summed): a busy machine's share of its
    /// wall time. Not of the processes it starts.
    #[serde(default)]
    pub cpu_wait: f64,
    /// Peak resident set size in KiB.
    pub max_rss_kib: u64,
    /// Instructions executed, when counted (`metric = "instructions"`).
    pub instructions: Option<u64>,
    /// The last bytes of standard error (only kept when the run did not succeed).
    pub stderr_tail: String,
    /// Processes that left the run's process group (`setsid`, a daemon) and still held its
    /// standard error after it ended: `pid command`, each killed.
    pub escaped: Vec<String>,
}

impl RunResult {
    pub fn metric(&self, metric: Metric) -> f64 {
        metric.of_run(
            self.wall,
            self.user,
            self.system_cpu_s,
            self.max_rss_kib as f64,
            self.instructions,
        )
    }

    pub(crate) fn failed_to_start(why: String) -> RunResult {
        RunResult::not_run(Outcome::SpawnFailed(why))
    }

    /// A run that did not happen, ended as `outcome` (it could not start, or its program did
    /// not build).
    pub(crate) fn not_run(outcome: Outcome) -> RunResult {
        RunResult {
            outcome,
            wall: 0.0,
            user: 0.0,
            system_cpu_s: 0.0,
            cpu_wait: 0.0,
            max_rss_kib: 0,
            instructions: None,
            stderr_tail: String::new(),
            escaped: Vec::new(),
        }
    }
}

/// How long the output is read after the run's process group is gone: its own processes
/// have closed the pipe by then; whoever still holds it left the group.
const ESCAPED_GRACE: Duration = Duration::from_millis(200);

/// What `wait4` reports, and the run delay read just before.
struct Reaped {
    status: libc::c_int,
    usage: libc::rusage,
    at: Instant,
    cpu_wait: f64,
}

/// How often the run delays of a running program's threads are read.
const THREAD_SAMPLE: Duration = Duration::from_millis(20);

/// The run delays of a program's threads, read while it runs. The kernel keeps a run delay
/// per thread, and a process's own `/proc/PID/schedstat` is its main thread's: a program
/// whose work runs on another thread (the main one waiting for it) would show that thread's
/// waits for a CPU as sleep. Threads are read every [`THREAD_SAMPLE`] and once more when the
/// program has exited (before it is reaped, so its pid cannot have been reused); a thread
/// that ends between two readings loses the waits since the last one.
struct ThreadWaits {
    pid: libc::pid_t,
    stop: mpsc::Sender<()>,
    sampler: std::thread::JoinHandle<std::collections::HashMap<u32, f64>>,
}

impl ThreadWaits {
    fn sample(pid: libc::pid_t) -> ThreadWaits {
        let (stop, stopped) = mpsc::channel::<()>();
        let sampler = std::thread::spawn(move || {
            let mut seen = std::collections::HashMap::new();
            loop {
                read_thread_waits(pid, &mut seen);
                if stopped.recv_timeout(THREAD_SAMPLE) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return seen;
                }
            }
        });
        ThreadWaits { pid, stop, sampler }
    }

    /// Seconds the program's threads waited on a run queue in all; call once the program
    /// has exited and before it is reaped.
    fn total(self) -> f64 {
        let _ = self.stop.send(());
        let mut seen = self.sampler.join().unwrap_or_default();
        read_thread_waits(self.pid, &mut seen);
        seen.values().sum()
    }
}

/// Each thread of `pid`'s latest run delay (the second field of its `schedstat`, in
/// nanoseconds) into `seen`, by thread id; nothing where the kernel does not keep it.
fn read_thread_waits(pid: libc::pid_t, seen: &mut std::collections::HashMap<u32, f64>) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let delay = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok());
        if let Some(ns) = delay {
            let wait = seen.entry(tid).or_insert(0.0);
            *wait = wait.max(ns as f64 * 1e-9);
        }
    }
}

/// Waits until `pid` has exited without reaping it, so that its `/proc` entry can still be
/// read.
fn wait_exited(pid: libc::pid_t) {
    loop {
        // SAFETY: waiting for our own child; `info` is plain old data waitid fills.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

fn seconds(t: libc::timeval) -> f64 {
    t.tv_sec as f64 + t.tv_usec as f64 * 1e-6
}

/// Runs the invocation once. Standard output is discarded; standard error is read so the
/// program never blocks on a full pipe, and its tail is kept for failures.
pub fn run(inv: &Invocation) -> RunResult {
    run_with(inv, None)
}

/// Runs the invocation once like [`run`], with standard output and standard error both
/// appended to `log` (a build's log); `stderr_tail` stays empty, the log has it all.
pub fn run_logged(inv: &Invocation, log: &std::fs::File) -> RunResult {
    run_with(inv, Some(log))
}

/// Of knobs' environment, what a counted run keeps: where programs and libraries are found,
/// the home and temporary directories, the locale (and every `LC_` variable), the time zone
/// and the terminal. Everything else (a shell's or cargo's variables, which change with how
/// knobs was started) is left out, as every `getenv` and the C library's start-up walk the
/// whole environment: xz counts 36,000 instructions more under `cargo run` than from a shell.
const STEADY_VARIABLES: &[&str] = &[
    "PATH",
    "LD_LIBRARY_PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
];

/// Of knobs' environment, what a counted run keeps ([`STEADY_VARIABLES`]), sorted.
pub fn steady_environment(vars: impl Iterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = vars
        .filter(|(k, _)| STEADY_VARIABLES.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect();
    kept.sort();
    kept
}

/// How knobs starts a counted run, as far as it moves the count: the environment it keeps
/// and the `argv[0]` it gives. A counted spec's hash includes it, so that runs counted under
/// another way of starting the program are measured again rather than reused. The version
/// counts changes the list does not show (the `argv[0]` rule); raise it with such a change.
pub fn counted_launch() -> String {
    format!(
        "launch 1: argv[0] the native program's path; environment {} LC_*",
        STEADY_VARIABLES.join(" ")
    )
}

fn run_with(inv: &Invocation, log: Option<&std::fs::File>) -> RunResult {
    let stdin = match &inv.stdin {
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => Stdio::from(f),
            Err(e) => {
                return RunResult::failed_to_start(format!(
                    "cannot open standard input `{}`: {e}",
                    path.display()
                ));
            }
        },
        None => Stdio::null(),
    };
    let (stdout, stderr) = match log.map(|f| f.try_clone().and_then(|g| Ok((f.try_clone()?, g)))) {
        None => (Stdio::null(), Stdio::piped()),
        Some(Ok((out, err))) => (Stdio::from(out), Stdio::from(err)),
        Some(Err(e)) => return RunResult::failed_to_start(format!("cannot write the log: {e}")),
    };
    let mut command = Command::new(&inv.program);
    if let Some(arg0) = &inv.arg0 {
        command.arg0(arg0);
    }
    if inv.steady_env {
        command
            .env_clear()
            .envs(steady_environment(std::env::vars()));
    }
    command
        .args(&inv.args)
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&inv.cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    // No `pre_exec`: with one, std forks the whole knobs process and the child's `exec` then
    // tears that copy down on the run's clock (a 260 MB knobs added 10 ms of system time to
    // every run of a 30 ms program, and its size to the run's max_rss). Without one, std
    // spawns with posix_spawn (clone with CLONE_VM|CLONE_VFORK), which copies nothing, so a
    // run costs the same whatever measures it. The watchdog, running before the clock
    // starts, is told the group as soon as the spawn returns.
    watchdog::start();
    let start = Instant::now();
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return RunResult::failed_to_start(format!("{}: {e}", inv.program.display())),
    };
    let pid = child.id() as libc::pid_t;
    RUNNING_GROUP.store(pid, Ordering::SeqCst);
    watchdog::running(pid);
    // The tail is shared, not returned: the reader may never finish (see ESCAPED_GRACE).
    let tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let (eof_tx, eof_rx) = mpsc::channel::<()>();
    let pipe = child.stderr.as_ref().and_then(pipe_inode);
    if let Some(mut stderr) = child.stderr.take() {
        let tail = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                        t.extend_from_slice(&buf[..n]);
                        if t.len() > 2 * STDERR_TAIL_BYTES {
                            let excess = t.len() - STDERR_TAIL_BYTES;
                            t.drain(..excess);
                        }
                    }
                }
            }
            let _ = eof_tx.send(());
        });
    }
    // A blocking wait4 on its own thread, so the timeout is a channel deadline rather
    // than polling (which would blur the wall time).
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: rusage is plain old data; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let threads = ThreadWaits::sample(pid);
        wait_exited(pid);
        let at = Instant::now();
        let cpu_wait = threads.total();
        loop {
            // SAFETY: waiting for our own child; pointers are valid for the call.
            let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            if r == pid || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        let _ = tx.send(Reaped {
            status,
            usage,
            at,
            cpu_wait,
        });
    });
    let (reaped, timed_out) = match rx.recv_timeout(inv.timeout) {
        // A run that ended past its timeout before this thread woke up (a busy machine) ran
        // past it all the same.
        Ok(r) => {
            let late = r.at.duration_since(start) > inv.timeout;
            (r, late)
        }
        Err(_) => {
            kill_group(pid);
            (rx.recv().expect("the waiting thread reports"), true)
        }
    };
    // Anything the program left behind in its group goes too (and releases the pipe).
    kill_group(pid);
    RUNNING_GROUP.store(0, Ordering::SeqCst);
    watchdog::running(0);
    // `child` was reaped by wait4; dropping it does not wait again.
    drop(child);
    // Whoever still holds standard error now left the group: name and kill them, and stop
    // reading (the reader thread ends when they are gone).
    let escaped = match pipe {
        Some(pipe) if eof_rx.recv_timeout(ESCAPED_GRACE).is_err() => kill_pipe_holders(pipe),
        _ => Vec::new(),
    };
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let status = std::process::ExitStatus::from_raw(reaped.status);
    let outcome = if timed_out {
        Outcome::Timeout
    } else if let Some(code) = status.code() {
        if code == 0 {
            Outcome::Ok
        } else {
            Outcome::Exit(code)
        }
    } else {
        Outcome::Signal(status.signal().unwrap_or(0))
    };
    let stderr_tail = if outcome.is_ok() {
        String::new()
    } else {
        let start = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        String::from_utf8_lossy(&tail[start..]).trim().to_string()
    };
    RunResult {
        outcome,
        wall: reaped.at.duration_since(start).as_secs_f64(),
        user: seconds(reaped.usage.ru_utime),
        system_cpu_s: seconds(reaped.usage.ru_stime),
        cpu_wait: reaped.cpu_wait,
        max_rss_kib: reaped.usage.ru_maxrss.max(0) as u64,
        instructions: None,
        stderr_tail,
        escaped,
    }
}

/// The inode of a pipe end (as `/proc/PID/fd` links name it: `pipe:[INODE]`).
fn pipe_inode(end: &std::process::ChildStderr) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstat on a file descriptor we own; `st` is plain old data it fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(end.as_raw_fd(), &mut st) == 0).then_some(st.st_ino)
    }
}

/// Kills every other process that holds the pipe `inode` open, and names them
/// (`pid command`).
fn kill_pipe_holders(inode: u64) -> Vec<String> {
    let me = std::process::id();
    let target = format!("pipe:[{inode}]");
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let holds = std::fs::read_dir(entry.path().join("fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == target.as_str())
            })
        });
        if holds {
            let command = std::fs::read(entry.path().join("cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .split('\0')
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            // SAFETY: sending a signal to a process found holding our pipe.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            out.push(format!("{pid} {command}"));
        }
    }
    out
}

/// A process that outlives knobs to kill the running program's group when knobs dies
/// without a chance to (SIGKILL): `PR_SET_PDEATHSIG` reaches only the direct child, not the
/// processes it started. It reads the group of the run in progress from a pipe (`0`: none)
/// and, when the pipe closes — knobs exited, however — kills the last group it was told.
/// What it cannot reach: processes that left the group (`setsid`, daemons); those that
/// still hold the run's output when it ends are killed by [`run`] (`RunResult::escaped`).
mod watchdog {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::sync::Mutex;

    /// Our end of the watchdog's input: a socket, not a pipe, so a write after the watchdog
    /// died fails (MSG_NOSIGNAL) instead of raising SIGPIPE in knobs. `Some(None)`: it could
    /// not be started.
    static INPUT: Mutex<Option<Option<UnixStream>>> = Mutex::new(None);

    /// POSIX sh (dash takes neither `--` nor `-KILL` before a negative pid: `-9 -PGID`).
    const SCRIPT: &str = "g=0; while IFS= read -r l; do g=$l; done; \
        if [ \"$g\" != 0 ]; then kill -9 -\"$g\" 2>/dev/null; fi";

    fn start_process() -> Option<UnixStream> {
        let (ours, theirs) = UnixStream::pair().ok()?;
        Command::new("/bin/sh")
            .args(["-c", SCRIPT])
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        Some(ours)
    }

    /// Starts the watchdog if it is not running yet (before a run's clock starts).
    pub(super) fn start() {
        let mut input = INPUT.lock().unwrap_or_else(|e| e.into_inner());
        input.get_or_insert_with(start_process);
    }

    /// Tells the watchdog (started on first use) which group is running (`0`: none).
    pub(super) fn running(pgid: libc::pid_t) {
        let mut input = INPUT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stream) = input.get_or_insert_with(start_process) {
            let _ = stream.write_all(format!("{pgid}\n").as_bytes());
        }
    }
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: sending a signal; ESRCH (group already gone) is fine.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// The process group of the run in progress (0: none), for the interrupt handler.
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    let group = RUNNING_GROUP.load(Ordering::SeqCst);
    // SAFETY: killpg, signal and raise are async-signal-safe.
    unsafe {
        if group > 0 {
            libc::killpg(group, libc::SIGKILL);
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// Makes Ctrl-C, SIGTERM and SIGHUP kill the running program's whole process group before
/// knobs exits. The program runs in its own group, so a terminal's Ctrl-C does not reach it.
pub fn kill_runs_on_interrupt() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only calls async-signal-safe functions.
        unsafe {
            libc::signal(sig, on_interrupt as *const () as libc::sighandler_t);
        }
    }
}

/// A timeout that never fires in practice, for callers that want none.
pub const NO_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// This process's peak resident memory so far, in MiB: `VmHWM` of /proc/self/status, the
/// high-water mark of this program's own address space. Not `getrusage`'s `ru_maxrss`
/// (the fallback where /proc is missing), which Linux carries over `exec` from the process
/// that forked: a knobs started by a 450 MiB runner reported 450 MiB. `None` when neither
/// says anything.
pub fn peak_memory_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    if let Some(kib) = hwm.filter(|k| *k > 0.0) {
        return Some(kib / 1024.0);
    }
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given, which lives for the call.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0;
    (ok && usage.ru_maxrss > 0).then(|| usage.ru_maxrss as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sh(script: &str, timeout: Duration) -> RunResult {
        run(&Invocation {
            program: PathBuf::from("/bin/sh"),
            arg0: None,
            args: vec!["-c".into(), script.into()],
            env: vec![("KNOBS_TEST".into(), "42".into())],
            steady_env: false,
            cwd: std::env::temp_dir(),
            stdin: None,
            timeout,
        })
    }

    #[test]
    fn a_run_costs_the_same_whatever_the_size_of_the_process_measuring_it() {
        // A forked child holds a copy of the parent's address space until its `exec` tears
        // it down, on the run's clock: under a 512 MiB parent that was about 20 ms of
        // system time per run, where `sh -c true` takes about 1 ms.
        let cpu = || {
            let runs: Vec<f64> = (0..9)
                .map(|_| {
                    let r = sh("true", NO_TIMEOUT);
                    assert!(r.outcome.is_ok(), "{r:?}");
                    r.user + r.system_cpu_s
                })
                .collect();
            ::stats::median(&runs).unwrap()
        };
        let small = cpu();
        let ballast = vec![1u8; 512 << 20];
        let big = cpu();
        assert_eq!(ballast[ballast.len() - 1], 1);
        drop(ballast);
        assert!(
            big < small + 0.008,
            "sh -c true took {small} s of CPU time measured by a small process, {big} s by a \
             512 MiB one"
        );
    }

    #[test]
    fn measures_a_successful_run() {
        let r = sh("test \"$KNOBS_TEST\" = 42 && sleep 0.2", NO_TIMEOUT);
        assert_eq!(r.outcome, Outcome::Ok, "{}", r.stderr_tail);
        assert!(r.wall >= 0.2 && r.wall < 5.0, "{}", r.wall);
        assert!(r.max_rss_kib > 0);
    }

    #[test]
    fn cpu_time_is_recorded() {
        let r = sh(
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
            NO_TIMEOUT,
        );
        assert!(r.outcome.is_ok());
        assert!(r.user + r.system_cpu_s > 0.05, "{r:?}");
    }

    #[test]
    fn failures_keep_the_stderr_tail() {
        let r = sh(
            "echo starting >&2; echo 'bad input' >&2; exit 3",
            NO_TIMEOUT,
        );
        assert_eq!(r.outcome, Outcome::Exit(3));
        assert!(r.stderr_tail.ends_with("bad input"), "{}", r.stderr_tail);
        let r = sh("kill -SEGV $$", NO_TIMEOUT);
        assert_eq!(r.outcome, Outcome::Signal(libc::SIGSEGV));
        assert!(r.outcome.describe().contains("SIGSEGV"));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let marker = tempfile::NamedTempFile::new().unwrap();
        let path = marker.path().display().to_string();
        // A grandchild that would write after the timeout, if it survived.
        let script = format!("(sleep 1.5; echo alive > {path}) & sleep 30");
        let t = Instant::now();
        let r = sh(&script, Duration::from_millis(300));
        assert_eq!(r.outcome, Outcome::Timeout);
        assert!(t.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(1800));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "",
            "grandchild survived"
        );
    }

    #[test]
    fn a_steady_environment_keeps_the_paths_and_locale_only() {
        let vars = [
            ("CARGO_PKG_NAME", "measure"),
            ("PATH", "/usr/bin"),
            ("LC_ALL", "C"),
            ("OLDPWD", "/somewhere/else"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let kept = steady_environment(vars.into_iter());
        let names: Vec<&str> = kept.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["HOME", "LC_ALL", "PATH"]);
    }

    /// A run with a steady environment sees the spec's variables and not knobs' others.
    #[test]
    fn a_steady_run_sees_only_its_own_variables() {
        let script =
            "test -z \"$OLDPWD$CARGO_MANIFEST_DIR$RUST_TEST_THREADS\" && test \"$KNOBS_TEST\" = 42";
        let mut inv = Invocation {
            program: PathBuf::from("/bin/sh"),
            arg0: None,
            args: vec!["-c".into(), script.into()],
            env: vec![("KNOBS_TEST".into(), "42".into())],
            steady_env: true,
            cwd: std::env::temp_dir(),
            stdin: None,
            timeout: NO_TIMEOUT,
        };
        assert!(run(&inv).outcome.is_ok());
        // Under cargo test, knobs' own environment has CARGO_MANIFEST_DIR.
        inv.steady_env = false;
        let inherited = std::env::var_os("CARGO_MANIFEST_DIR").is_some();
        assert_eq!(run(&inv).outcome.is_ok(), !inherited);
    }

    /// `cp` copies its own command line, whose first word is the `argv[0]` it was given.
    #[test]
    fn the_program_gets_the_argv0_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("cmdline");
        let r = run(&Invocation {
            program: PathBuf::from("/bin/cp"),
            arg0: Some("/where/the/native/program/is".into()),
            args: vec!["/proc/self/cmdline".into(), out.display().to_string()],
            env: vec![],
            steady_env: false,
            cwd: std::env::temp_dir(),
            stdin: None,
            timeout: NO_TIMEOUT,
        });
        assert!(r.outcome.is_ok(), "{r:?}");
        let cmdline = std::fs::read(&out).unwrap();
        assert!(cmdline.starts_with(b"/where/the/native/program/is\0/proc/self/cmdline\0"));
    }

    #[test]
    fn missing_program_is_a_failure_not_a_panic() {
        let r = run(&Invocation {
            program: PathBuf::from("/nonexistent/prog"),
            arg0: None,
            args: vec![],
            env: vec![],
            steady_env: false,
            cwd: std::env::temp_dir(),
            stdin: None,
            timeout: NO_TIMEOUT,
        });
        assert!(matches!(r.outcome, Outcome::SpawnFailed(_)));
        assert_eq!(r.outcome.status(), "failed");
    }

    #[test]
    fn peak_memory_of_this_process() {
        let mib = peak_memory_mib().expect("Linux reports the peak resident set");
        // A test binary holds at least a few hundred KiB, and far less than a terabyte.
        assert!(mib > 0.1 && mib < 1024.0 * 1024.0, "{mib}");
        // It grows with what this process touches: 64 MiB written page by page.
        let block = vec![1u8; 64 << 20];
        let after = peak_memory_mib().unwrap();
        assert!(after >= mib.max(64.0), "{after} after 64 MiB, {mib} before");
        drop(block);
    }

    /// A program started by a process that held much memory reports its own peak, not its
    /// parent's (getrusage's ru_maxrss keeps the parent's across exec).
    #[test]
    fn peak_memory_is_not_the_parents() {
        let block = vec![1u8; 256 << 20];
        let out = std::process::Command::new("sh")
            .args(["-c", "grep VmHWM /proc/self/status"])
            .output()
            .unwrap();
        drop(block);
        let text = String::from_utf8_lossy(&out.stdout);
        let kib: f64 = text
            .trim()
            .trim_start_matches("VmHWM:")
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{text}"));
        assert!(kib < 64.0 * 1024.0, "a shell's own peak: {kib} KiB");
    }
}
