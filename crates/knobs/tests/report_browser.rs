//! `knobs report` rendered in a real browser: Debian's xz measured pair-wise (a small input,
//! two rounds), a stepwise and a CART model learned from it, the report written, and headless
//! Chromium (installed by scripts/setup-debian.sh) asked what a person would see: the page
//! renders without console errors and requests nothing from the network (Chromium's net
//! log, with every host name mapped to nowhere), the charts are there and have
//! marks, the option the model ranks first is named, and a screenshot is not blank.
//!
//! Nothing here depends on the machine's speed: the top option is computed from the model
//! file the run wrote, whatever the measurements were.

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

fn knobs(dir: &Path, args: &[&str]) -> String {
    let out = Command::cargo_bin("knobs")
        .unwrap()
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "knobs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("chromium"))
        .find(|p| p.exists());
    found.expect("chromium is not installed: scripts/setup-debian.sh installs it")
}

/// What Chromium did with a page: its stdout, the console messages it logged, and the
/// network requests the page made.
struct Browsed {
    stdout: String,
    console: Vec<String>,
    requests: Vec<String>,
}

/// Runs headless Chromium on a file with `extra` arguments.
fn browse(page: &Path, extra: &[&str]) -> Browsed {
    let profile = tempfile::tempdir().unwrap();
    let net_log = profile.path().join("net-log.json");
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
            // No host name resolves: nothing leaves the machine, and the net log still
            // records every request the page tried.
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--log-net-log={}", net_log.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Browsed {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
        requests: page_requests(&net_log),
    }
}

/// The URLs of the requests a `file://` page started, from Chromium's net log (the
/// browser's own requests, such as update checks, belong to no page and are left out).
fn page_requests(net_log: &Path) -> Vec<String> {
    let log: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(net_log).unwrap()).unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["params"])
        .filter(|p| {
            p["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.starts_with("file://"))
        })
        .filter_map(|p| p["url"].as_str().map(str::to_string))
        .collect()
}

/// Pixels of a PNG that are not (nearly) white, and those of the bars' red.
fn ink(png_path: &Path) -> (usize, usize, usize) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    let pixels = &buffer[..info.buffer_size()];
    let (mut inked, mut red) = (0, 0);
    for p in pixels.chunks(channels) {
        let (r, g, b) = (p[0], p[1], p[2]);
        if r < 235 || g < 235 || b < 235 {
            inked += 1;
        }
        if r > 150 && g < 90 && b < 90 {
            red += 1;
        }
    }
    (inked, red, pixels.len() / channels)
}

/// The options `knobs model show --spec` ranks first (ties included): the report must name
/// one of them, as both read effects over the space's valid configurations (how effects are
/// computed is `model_effects_cli.rs`'s to check).
fn top_options(shown: &str) -> Vec<String> {
    let options: Vec<(String, String)> = shown
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("option "))
        .map(|rest| {
            let mut words = rest.split_whitespace();
            let name = words.next().unwrap().to_string();
            (name, words.collect::<Vec<_>>().join(" "))
        })
        .collect();
    let first = &options.first().expect("model show lists options").1;
    options
        .iter()
        .filter(|(_, effect)| effect == first)
        .map(|(name, _)| name.clone())
        .collect()
}

/// The number of marks in the chart named `name` of a (rendered) page.
fn marks(page: &str, name: &str) -> usize {
    let start = page
        .find(&format!("data-chart=\"{name}\""))
        .unwrap_or_else(|| panic!("no chart `{name}`"));
    let end = start + page[start..].find("</svg>").unwrap();
    page[start..end].matches("class=\"mark").count()
}

#[test]
fn reports_render_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let xz = dir.path().join("xz");
    std::fs::create_dir(&xz).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let spec = std::fs::read_to_string(repo.join("examples/xz/knobs.toml"))
        .unwrap()
        .replace("repetitions = 3", "repetitions = 2")
        .replace("args = [\"input.txt\"]", "args = [\"small.txt\"]");
    std::fs::write(xz.join("knobs.toml"), spec).unwrap();
    // Ten times the example's small text, so that the options' effects stand clear of the
    // noise of a loaded machine and the stepwise model keeps terms.
    let text: String = (1..=20_000u64)
        .map(|i| format!("{} lorem ipsum\n", i * 7919 % 100_003))
        .collect();
    std::fs::write(xz.join("small.txt"), &text).unwrap();
    std::fs::write(xz.join("input.txt"), &text).unwrap();
    knobs(
        &xz,
        &["measure", "--spec", "knobs.toml", "--sample", "pairwise"],
    );
    knobs(
        &xz,
        &[
            "learn",
            "knobs.db",
            "--learner",
            "stepwise",
            "-o",
            "stepwise.json",
        ],
    );
    knobs(
        &xz,
        &["learn", "knobs.db", "--learner", "cart", "-o", "cart.json"],
    );
    knobs(
        &xz,
        &[
            "report",
            "--spec",
            "knobs.toml",
            "--model",
            "stepwise.json",
            "--model",
            "cart.json",
            "-o",
            "report.html",
        ],
    );
    let html = std::fs::read_to_string(xz.join("report.html")).unwrap();
    for forbidden in [
        "<script", "<link", "src=", "http:", "https:", "@import", "url(",
    ] {
        assert!(!html.contains(forbidden), "the report has `{forbidden}`");
    }
    let top = top_options(&knobs(
        &xz,
        &["model", "show", "stepwise.json", "--spec", "knobs.toml"],
    ));

    let browsed = browse(&xz.join("report.html"), &["--dump-dom"]);
    assert!(browsed.console.is_empty(), "console: {:?}", browsed.console);
    assert!(browsed.requests.is_empty(), "loads: {:?}", browsed.requests);
    let dom = browsed.stdout;
    for chart in [
        "options",
        "terms",
        "predicted-vs-measured",
        "measured-effects",
        "noise",
    ] {
        assert!(marks(&dom, chart) > 0, "chart `{chart}` has no marks");
    }
    // One scatter per model, one mark per measured configuration.
    assert_eq!(marks(&dom, "predicted-vs-measured"), 12);
    assert_eq!(
        dom.matches("data-chart=\"predicted-vs-measured\"").count(),
        2
    );
    let named = &dom[dom.find("id=\"top-option\"").expect("top option")..];
    let named = &named[..named.find("</p>").unwrap()];
    assert!(
        top.iter()
            .any(|o| named.contains(&format!("<strong>{o}</strong>"))),
        "none of the top options {top:?} is named first: {named}"
    );

    let shot = xz.join("report.png");
    let browsed = browse(
        &xz.join("report.html"),
        &[
            "--window-size=1100,1600",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(browsed.console.is_empty(), "console: {:?}", browsed.console);
    let (inked, red, all) = ink(&shot);
    assert!(inked * 50 > all, "{inked} of {all} pixels not white: blank");
    assert!(red > 200, "only {red} pixels of the bars' red");

    // The store alone: the measured effects and the noise, no model charts.
    knobs(&xz, &["report", "--spec", "knobs.toml", "-o", "store.html"]);
    let browsed = browse(&xz.join("store.html"), &["--dump-dom"]);
    assert!(browsed.console.is_empty(), "console: {:?}", browsed.console);
    let dom = browsed.stdout;
    assert_eq!(marks(&dom, "noise"), 12);
    assert!(marks(&dom, "measured-effects") > 0);
    assert!(!dom.contains("data-chart=\"terms\""));
    assert!(dom.contains("id=\"top-option\""));

    // The harness sees a broken page: a script error and a network load are caught.
    let broken = xz.join("broken.html");
    std::fs::write(
        &broken,
        "<html><body><img src=\"http://example.org/x.png\"><script>nope()</script></body></html>",
    )
    .unwrap();
    let browsed = browse(&broken, &["--dump-dom"]);
    assert_eq!(browsed.console.len(), 1, "{:?}", browsed.console);
    assert_eq!(browsed.requests, ["http://example.org/x.png"]);
}

#[test]
fn region_models_render_with_their_code() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = repo.join("examples/running-example");
    let out = dir.path().join("regions.html");
    knobs(
        dir.path(),
        &[
            "report",
            "--spec",
            example.join("knobs.toml").to_str().unwrap(),
            "--model",
            example.join("model.json").to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let browsed = browse(&out, &["--dump-dom"]);
    assert!(browsed.console.is_empty(), "console: {:?}", browsed.console);
    assert!(browsed.requests.is_empty(), "loads: {:?}", browsed.requests);
    let dom = browsed.stdout;
    assert_eq!(marks(&dom, "regions"), 3);
    // OR2 is `foo` at main.c:16-21, shown with its code.
    assert!(dom.contains("OR2 · foo() · main.c:16-21"), "{dom}");
    let main_c = std::fs::read_to_string(example.join("main.c")).unwrap();
    let line_16 = main_c.lines().nth(15).unwrap().trim();
    assert!(
        dom.contains(&report::escape(line_16)),
        "source line 16 `{line_16}` missing"
    );
    assert!(dom.contains("<strong>A</strong>"), "A is the top option");

    // Neither a store nor a model: one clear error.
    let none = Command::cargo_bin("knobs")
        .unwrap()
        .args(["report", "--spec", "nowhere/knobs.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("nothing to report"), "{stderr}");
}
