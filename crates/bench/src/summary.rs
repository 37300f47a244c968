//! The markdown rendering of the recorded rows ([`crate::rows`]): the summary regenerated
//! from the newest row per subject and approach (`docs/results/rows/latest.md`) and
//! README.md's headline table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::compare::{Compared, Comparison};
use crate::rows::{COMPARISON, Row, Status, read_all};

/// The summary's file name in the results directory.
pub const LATEST: &str = "latest.md";

/// The approach a row ran, as the summary keys it: its step name, with the black-box rows
/// of schema 2 (named `featurewise`/`pairwise`, the learner in their details) as
/// `SAMPLE/LEARNER`.
fn key(row: &Row) -> String {
    match row.approach.as_str() {
        "featurewise" | "pairwise" => format!(
            "{}/{}",
            row.approach,
            row.details
                .get("learner")
                .and_then(Value::as_str)
                .unwrap_or("stepwise")
        ),
        a => a.to_string(),
    }
}

/// The approaches as the summary names them.
fn approach_label(row: &Row) -> String {
    let base = match kind(row) {
        "brute-force" => "brute force".into(),
        "crush" => "ConfigCrusher".into(),
        "comprex" => "Comprex".into(),
        "splat" => "SPLat".into(),
        "splat-delayed" => "SPLat-delayed".into(),
        "family" => "family-based".into(),
        "repeat" => "brute force again".into(),
        _ if key(row).contains('/') => blackbox_label(&key(row)),
        other => other.to_string(),
    };
    if row.details.contains_key("again_of") {
        return format!("{base} again");
    }
    match row.details.get("extra_args").and_then(Value::as_array) {
        Some(args) => format!(
            "{base}, `{}`",
            args.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        ),
        None => base,
    }
}

/// `random:50/lasso` → `random 50 + lasso`; `random:as:comprex/auto` → `random, as many as
/// Comprex + auto`.
fn blackbox_label(run: &str) -> String {
    let (sample, learner) = crate::subjects::split_run(run).unwrap_or((run, "?"));
    let sample = match sample {
        "featurewise" => "feature-wise".to_string(),
        "pairwise" => "pair-wise".to_string(),
        s => match s.strip_prefix(crate::subjects::RANDOM_AS) {
            Some(step) => format!("random, as many as {}", step_label(step)),
            None => s.replace(':', " "),
        },
    };
    format!("{sample} + {learner}")
}

/// A white-box step's name as the tables say it.
fn step_label(step: &str) -> &str {
    match step {
        "crush" => "ConfigCrusher",
        "comprex" => "Comprex",
        "splat" => "SPLat",
        "splat-delayed" => "SPLat-delayed",
        "family" => "family-based",
        other => other,
    }
}

/// The approach a row ran (an extra run's is in its details).
fn kind(row: &Row) -> &str {
    row.details
        .get("approach_kind")
        .and_then(Value::as_str)
        .unwrap_or(&row.approach)
}

/// Where a row goes in a subject's table: white-box approaches first, then the black-box
/// runs in the order of [`crate::subjects::DEFAULT_RUNS`].
fn rank(row: &Row) -> (usize, usize, bool, String) {
    let order = [
        "brute-force",
        "repeat",
        "crush",
        "comprex",
        "splat",
        "splat-delayed",
        "family",
    ];
    let k = key(row);
    let black = crate::subjects::DEFAULT_RUNS
        .iter()
        .position(|r| *r == k)
        .unwrap_or(crate::subjects::DEFAULT_RUNS.len());
    (
        order
            .iter()
            .position(|o| *o == kind(row))
            .unwrap_or(order.len()),
        black,
        row.approach != kind(row),
        k,
    )
}

pub fn number(v: f64) -> String {
    if v.abs() >= 1e5 {
        format!("{:.2} M", v / 1e6)
    } else if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or("—".into(), number)
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn get_f64(v: &Value, path: &[&str]) -> Option<f64> {
    get(v, path).and_then(Value::as_f64)
}

/// The rows the summary shows: the newest per subject and approach (the latest date, the
/// later line on a tie), of quick runs or of full runs.
struct Newest<'a> {
    rows: BTreeMap<(String, String), &'a Row>,
    subjects: Vec<String>,
}

impl<'a> Newest<'a> {
    fn of(rows: &'a [Row], order: &[String], quick: bool) -> Newest<'a> {
        let mut newest: BTreeMap<(String, String), &Row> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.quick == quick) {
            let k = (r.subject.clone(), key(r));
            if newest.get(&k).is_none_or(|old| r.date >= old.date) {
                newest.insert(k, r);
            }
        }
        let mut subjects: Vec<String> = order
            .iter()
            .filter(|s| newest.keys().any(|(n, _)| n == *s))
            .cloned()
            .collect();
        for (s, _) in newest.keys() {
            if !subjects.contains(s) {
                subjects.push(s.clone());
            }
        }
        Newest {
            rows: newest,
            subjects,
        }
    }

    /// A subject's newest rows, by approach name.
    fn of_subject(&self, subject: &str) -> Vec<&'a Row> {
        self.rows
            .iter()
            .filter(|((s, _), _)| s == subject)
            .map(|(_, r)| *r)
            .collect()
    }

    fn get(&self, subject: &str, approach: &str) -> Option<&'a Row> {
        self.rows
            .get(&(subject.to_string(), approach.to_string()))
            .copied()
    }

    /// A row's comparison with the best model of its own run, when that run compared.
    fn compared(&self, row: &Row) -> Option<(Compared, String)> {
        let c = self.get(&row.subject, COMPARISON)?;
        if c.info.run != row.info.run {
            return None;
        }
        let comparison: Comparison =
            serde_json::from_value(c.details.get("comparison")?.clone()).ok()?;
        let me = comparison
            .approaches
            .into_iter()
            .find(|a| a.approach == row.approach)?;
        Some((me, comparison.best))
    }
}

/// A comparison cell: `best`, `worse (p = …)` or `not worse (p = …)`.
fn versus_best(newest: &Newest, row: &Row) -> String {
    match newest.compared(row) {
        None => "—".into(),
        Some((c, best)) if c.approach == best => "**best**".into(),
        Some((c, _)) => {
            let p = c.p_holm.map_or("?".into(), p_value);
            if c.worse {
                format!("worse (p {p})")
            } else {
                format!("not worse (p {p})")
            }
        }
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.3}")
    }
}

/// The headline table's columns: (approach key, heading).
const HEADLINE: [(&str, &str); 13] = [
    ("repeat", "brute force again"),
    ("crush", "ConfigCrusher"),
    ("crush-confirmed", "ConfigCrusher, confirmed"),
    ("comprex", "Comprex"),
    ("comprex-frugal", "Comprex, frugal"),
    ("splat", "SPLat"),
    ("splat-delayed", "SPLat-delayed"),
    ("family", "family-based"),
    ("featurewise/stepwise", "feature-wise + stepwise"),
    ("pairwise/stepwise", "pair-wise + stepwise"),
    (
        "random:as:comprex/auto",
        "random, as many as Comprex + auto",
    ),
    ("random:50/auto", "random 50 + auto"),
    ("random:200/auto", "random 200 + auto"),
];

/// A black-box row of schema 2 or earlier learned from the ground truth's own runs, not
/// from measurements of its own: its error leaves out the drift between sessions.
fn learned_from_the_ground_truth(row: &Row) -> bool {
    row.schema < 3 && key(row).contains('/')
}

/// Whether a row's step measured in rounds interleaved with the ground truth's
/// (`run::rounds`), not in a session of its own.
fn interleaved(row: &Row) -> bool {
    row.details
        .get("interleaved_rounds")
        .and_then(Value::as_u64)
        .is_some_and(|r| r > 1)
}

/// Whether a ground-truth row counted instructions (`--metric instructions`).
fn counted(truth: &Row) -> bool {
    truth.details.get("metric").and_then(Value::as_str) == Some("instructions")
}

/// Whether the tables over every subject show a subject: the real programs (a pinned
/// source) and, in counts, the bundled examples too, whose counted runs are their work
/// loops' instructions where their timed runs are mostly sleep.
fn in_tables(newest: &Newest, subject: &str) -> bool {
    newest
        .get(subject, "brute-force")
        .is_some_and(|t| t.source.is_some() || counted(t))
}

/// One table over every subject: per approach, its MAPE on all configurations and the
/// configurations it measured.
pub fn headline(rows: &[Row], order: &[String], quick: bool) -> String {
    let newest = Newest::of(rows, order, quick);
    let in_counts = newest
        .subjects
        .iter()
        .filter_map(|s| newest.get(s, "brute-force"))
        .any(counted);
    let mut out = String::from(if in_counts {
        "MAPE (%) on every configuration of the ground truth, and in brackets the \
         configurations measured (a mean over seeds for the black-box approaches); **bold**: \
         the most accurate model of the run, † significantly less accurate than it (Wilcoxon \
         signed-rank, Holm-corrected, α = 0.05); n/a: does not apply, failed: see \
         `docs/results/rows/metric-instructions/latest.md`. Each configuration is counted \
         once: a count repeats exactly, so *brute force again* is 0 and every error is the \
         approach's own. The white-box columns are compared with the counts of the plain \
         counting build (the program's own LLVM IR instructions), the others with the native \
         program's machine instructions (`docs/results/README.md`, \"Instruction counts as \
         the ground truth\").\n\n"
    } else {
        "MAPE (%) on every configuration of the ground truth, and in brackets the \
         configurations measured (a mean over seeds for the black-box approaches); **bold**: \
         the most accurate model of the run, † significantly less accurate than it (Wilcoxon \
         signed-rank, Holm-corrected, α = 0.05); n/a: does not apply, failed: see \
         `docs/results/rows/latest.md`. §: measured in rounds interleaved with the ground \
         truth's (one run of every configuration per round, each step in turn), so a drift of \
         the machine over the run falls on it and the ground truth alike. Unmarked: measured \
         in a session of its own (the black-box samples in one store shared by their runs), so \
         its error includes the drift between two measurement sessions. *Brute force again* is \
         the ground truth measured a second time, the floor under every other column. ‡: a \
         black-box row of an older run that learned from the ground truth's own runs, so \
         without that drift (`docs/results/README.md`).\n\n"
    });
    out.push_str(&across_subjects(&newest, |r| {
        let mut m = opt(r.mape_all_percent);
        match newest.compared(r) {
            Some((c, best)) if c.approach == best => m = format!("**{m}**"),
            Some((c, _)) if c.worse => m.push_str(" †"),
            _ => {}
        }
        if learned_from_the_ground_truth(r) {
            m.push_str(" ‡");
        }
        if interleaved(r) {
            m.push_str(" §");
        }
        format!("{m} ({})", opt(r.configurations))
    }));
    out
}

/// Per subject of the tables ([`in_tables`]) and approach, a cell of the newest row (`n/a`,
/// `failed` or `cell(row)`). A column that applies to no program is left out, and a line
/// under the table says so.
fn across_subjects(newest: &Newest, cell: impl Fn(&Row) -> String) -> String {
    let subjects: Vec<&String> = newest
        .subjects
        .iter()
        .filter(|s| in_tables(newest, s))
        .collect();
    let applies = |k: &str| {
        subjects.iter().any(|s| {
            newest
                .get(s, k)
                .is_none_or(|r| r.status != Status::NotApplicable)
        })
    };
    let (columns, left_out): (Vec<_>, Vec<_>) = HEADLINE.iter().partition(|(k, _)| applies(k));
    let mut out = String::from("| system | configurations |");
    for (_, h) in &columns {
        let _ = write!(out, " {h} |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(columns.len()));
    out.push('\n');
    for s in subjects {
        let truth = newest.get(s, "brute-force").expect("filtered above");
        let _ = write!(out, "| {s} | {} |", opt(truth.configurations));
        for (k, _) in &columns {
            let text = match newest.get(s, k) {
                None => "".into(),
                Some(r) if r.status == Status::NotApplicable => "n/a".into(),
                Some(r) if r.status == Status::Failed => "failed".into(),
                Some(r) => cell(r),
            };
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    if !left_out.is_empty() {
        let _ = write!(
            out,
            "\nNot shown, as they apply to none of these programs: {}.\n",
            left_out
                .iter()
                .map(|(_, h)| *h)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// The cost over every subject (Tables 5 and II): configurations measured, Σ of their
/// medians, and the approach's own analysis.
fn cost(newest: &Newest) -> String {
    let mut out = String::from(
        "Cost: configurations measured / Σ of their values (s) / the approach's own analysis \
         (s: static or dynamic taint analysis, exploration, learning).\n\n",
    );
    out.push_str(&across_subjects(newest, |r| {
        format!(
            "{} / {} / {}",
            opt(r.configurations),
            opt(r.measurement_seconds),
            opt(r.analysis_seconds)
        )
    }));
    out
}

/// What the white-box rows of a `--metric instructions` run are compared with.
const COUNTED_TRUTH: &str = "**Counted instructions** (`--metric instructions`): the brute \
    force, *brute force again* and the black-box rows count the native program's machine \
    instructions (`perf` or cachegrind, libc and the loader included); the white-box rows \
    (ConfigCrusher, Comprex, SPLat, family-based) build their counting variants, which count \
    the program's own LLVM IR instructions, and are compared with the counted ground truth of \
    the same unit: every ground-truth configuration run in the plain counting build \
    (`details.ground_truth_build`; docs/region-times.md, \"Counting\"). Counts repeat \
    exactly, so an error here is the approach's own, not the host's.\n\n";

/// The markdown summary of the newest row per subject and approach, of full runs or of
/// `--quick` ones. `order` lists the subjects in the order they are declared (others
/// follow, by name).
pub fn summary(rows: &[Row], order: &[String], quick: bool) -> String {
    let newest = Newest::of(rows, order, quick);
    let mut out = String::new();
    out.push_str(
        "# Benchmark results\n\n\
         Generated by `cargo run --release -p bench` (crates/bench, subjects declared in \
         `bench/subjects.toml`) from the newest row per subject and approach in \
         `docs/results/rows/*.jsonl`, which hold every number, the exact commands, the commit, the \
         machine and the load. Do not edit by hand. What the numbers show: \
         `docs/results/README.md`.\n\n\
         Measurement is Σ over the configurations an approach measured of their value (the \
         mean of the fastest half of their runs; the median in rows of schema 3 and older; wall \
         time unless the spec says otherwise); analysis is the approach's own analysis as it \
         reports it (static taint analysis for ConfigCrusher, taint exploration for Comprex \
         and SPLat, learning for the black-box approaches); total is the whole step's wall \
         time (builds, analysis and measuring). MAPE is against the ground truth, the native \
         program measured in every configuration (brute force): on the configurations an \
         approach did not measure (the papers' metric; none when it measured all), and on \
         all of them; a mean over seeds for the black-box approaches. Versus best: each \
         model's absolute percentage errors on every configuration paired with those of the \
         run's most accurate model, Wilcoxon's signed-rank test, Holm-corrected over the \
         run's comparisons.\n\n## Every system\n\n",
    );
    if quick {
        out.push_str(
            "**Quick runs** (`--quick`: small workloads, 2 repetitions, one seed): a check \
             that everything runs, not results.\n\n",
        );
    }
    if newest
        .rows
        .values()
        .any(|r| r.details.contains_key("ground_truth_build"))
    {
        out.push_str(COUNTED_TRUTH);
    }
    out.push_str(&headline(rows, order, quick));
    out.push('\n');
    out.push_str(&cost(&newest));
    for s in &newest.subjects {
        let mut table: Vec<&Row> = newest
            .rows
            .iter()
            .filter(|((n, a), _)| n == s && !TABLES_OF_THEIR_OWN.contains(&a.as_str()))
            .map(|(_, r)| *r)
            .collect();
        table.sort_by_key(|r| rank(r));
        let any = table
            .first()
            .copied()
            .or_else(|| TABLES_OF_THEIR_OWN.iter().find_map(|a| newest.get(s, a)));
        let Some(any) = any else { continue };
        let _ = write!(out, "\n## {s}\n\n`{}`", any.spec);
        if let Some(w) = &any.workload {
            let _ = write!(out, ", workload `{w}`");
        }
        if let Some(src) = &any.source {
            let _ = write!(
                out,
                "; {} {} ({}, `{}` sha256 `{}`)",
                src.package,
                src.version,
                src.origin,
                src.file
                    .file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into()),
                src.sha256
            );
        }
        out.push_str(".\n");
        if !table.is_empty() {
            out.push_str(
                "\n| approach | configurations | measurement (s) | analysis (s) | total (s) | \
                 MAPE on the unmeasured (%) | MAPE on all (%) | versus best | terms / regions | run |\n\
                 |---|---|---|---|---|---|---|---|---|---|\n",
            );
            for r in table {
                out.push_str(&table_row(&newest, r));
            }
        }
        noise(&mut out, &newest, s);
        granularity_table(&mut out, &newest, s);
        overheads(&mut out, &newest, s);
        blind_spots(&mut out, &newest, s);
    }
    out
}

fn table_row(newest: &Newest, r: &Row) -> String {
    let label = approach_label(r);
    if r.status != Status::Ok {
        let what = if r.status == Status::NotApplicable {
            "does not apply"
        } else {
            "failed"
        };
        let reason = short_reason(r.reason.as_deref().unwrap_or("")).replace('|', "\\|");
        return format!(
            "| {label} | *{what}*: {reason} | | | {} | | | | | {} |\n",
            number(r.elapsed_seconds),
            run_label(r)
        );
    }
    let mut configs = opt(r.configurations);
    if let Some(t) = r.total_configurations {
        let _ = write!(configs, " of {}", number(t));
    }
    if let Some(lb) = r.lower_bound {
        let _ = write!(configs, " (lower bound {})", number(lb));
    }
    // Schema 1 rows held a white-box model's error on all configurations in
    // `mape_percent`, the one on the unmeasured in `mape_not_measured`.
    let white_box = matches!(r.approach.as_str(), "crush" | "comprex");
    let (unmeasured, on_all) = if r.schema < 2 && white_box {
        let not_measured = r.detail_number("mape_not_measured");
        (not_measured, r.mape_percent)
    } else {
        (r.mape_percent, r.mape_all_percent)
    };
    let mut mape = opt(unmeasured);
    if let Some(sd) = r.detail_number("mape_sd") {
        let _ = write!(mape, " ± {} (sd)", number(sd));
    }
    if let Some(own) = r.detail_number("mape_own_native_runs") {
        let _ = write!(
            mape,
            " ({} against the native runs of its configurations, which it is corrected to)",
            number(own)
        );
    } else if let Some(own) = r.detail_number("mape_own_runs_corrected") {
        let _ = write!(
            mape,
            " ({} against its own runs, corrected for the profiler as the model is)",
            number(own)
        );
    } else if let Some(own) = r.detail_number("mape_own_runs") {
        // A corrected model against uncorrected profiled times: the overhead counts as error.
        let profiled = r.details.contains_key("correction_slope");
        let _ = write!(
            mape,
            " ({} against its own {}runs)",
            number(own),
            if profiled { "profiled " } else { "" }
        );
    }
    if learned_from_the_ground_truth(r) {
        mape.push_str(" ‡ (learned from the ground truth's runs)");
    }
    let mut all = opt(on_all);
    let mut versus = versus_best(newest, r);
    let mut shape = match (r.terms, r.regions) {
        (Some(t), Some(g)) if g > 0.0 => format!("{} / {}", number(t), number(g)),
        (Some(t), _) => number(t),
        _ => "—".into(),
    };
    if let Some(trees) = r
        .details
        .get("trees")
        .and_then(Value::as_f64)
        .filter(|t| *t > 0.0)
    {
        let _ = write!(shape, " + {} trees", number(trees));
    }
    if r.approach == "repeat" {
        mape = "— (every configuration again)".into();
    }
    if r.approach == "brute-force" {
        mape = "— (ground truth)".into();
        all = "—".into();
        versus = "—".into();
        shape = "—".into();
    }
    let mut total = number(r.elapsed_seconds);
    // Build options: the builds' time is part of the step's, apart from the runs'.
    if let (Some(builds), Some(seconds)) =
        (r.detail_number("builds"), r.detail_number("build_seconds"))
    {
        let made = r.detail_number("builds_made").unwrap_or(builds);
        let _ = write!(
            total,
            " ({} s building {} of {} programs)",
            number(seconds),
            number(made),
            number(builds)
        );
    }
    format!(
        "| {label} | {configs} | {} | {} | {total} | {mape} | {all} | {versus} | {shape} | {} |\n",
        opt(r.measurement_seconds),
        opt(r.analysis_seconds),
        run_label(r)
    )
}

/// A step's error without the command line it quotes (the row keeps it whole): "`knobs
/// crush …` failed (exit status: 2): why" → "failed (exit status: 2): why"; "did not finish
/// …: stopped `…`" → "did not finish …".
fn short_reason(reason: &str) -> String {
    let first = reason.lines().next().unwrap_or("");
    let first = match first.find("` failed") {
        Some(i) if first.starts_with('`') => &first[i + 2..],
        _ => first,
    };
    let first = first.split(": stopped `").next().unwrap_or(first);
    match first.rfind(" (log: ") {
        Some(i) => first[..i].to_string(),
        None => first.to_string(),
    }
}

/// Steps that are not an approach's model, shown in tables of their own under a subject's.
const TABLES_OF_THEIR_OWN: [&str; 3] = ["overhead", "granularity", COMPARISON];

/// Comprex's Table IV of one subject: per region granularity, its regions and the fewest
/// configurations that cover their partitions.
fn granularity_table(out: &mut String, newest: &Newest, s: &str) {
    let Some(r) = newest.get(s, "granularity") else {
        return;
    };
    if r.status != Status::Ok {
        let _ = writeln!(
            out,
            "\nComprex's Table IV *failed*: {} ({}).",
            short_reason(r.reason.as_deref().unwrap_or("")),
            run_label(r)
        );
        return;
    }
    let _ = write!(
        out,
        "\nComprex's Table IV, regions and configurations to measure at each region \
         granularity, from one taint exploration of {} runs in {} s ({}):\n\n\
         | granularity | regions | configurations (of {}) |\n|---|---|---|\n",
        opt(r.detail_number("taint_runs")),
        opt(r.analysis_seconds),
        run_label(r),
        opt(r.total_configurations)
    );
    let table = r.details.get("table").and_then(Value::as_array);
    for g in table.into_iter().flatten() {
        let cover = get_f64(g, &["configurations"]).map_or("—".into(), number);
        let minimal = match get(g, &["cover_minimal"]).and_then(Value::as_bool) {
            Some(false) => " (not proven the fewest)",
            _ => "",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {cover}{minimal} |",
            get(g, &["granularity"])
                .and_then(Value::as_str)
                .unwrap_or("?"),
            opt(get_f64(g, &["regions"]))
        );
    }
}

/// The ground truth's run-to-run noise against the span of its configurations, and the
/// drift between two sessions (the repeat), when the rows have them.
fn noise(out: &mut String, newest: &Newest, s: &str) {
    let Some(r) = newest
        .get(s, "brute-force")
        .filter(|r| r.status == Status::Ok)
    else {
        return;
    };
    let Some(n) = r.details.get("noise") else {
        return;
    };
    let f = |k: &str| get_f64(n, &[k]);
    let metric = r
        .details
        .get("metric")
        .and_then(Value::as_str)
        .unwrap_or("");
    let unit = if metric.ends_with("_s") { " s" } else { "" };
    let _ = write!(
        out,
        "\nNoise: the ground truth's {} runs per configuration vary by a coefficient of \
         variation of {} % (median over its configurations; largest {} %, {} configurations \
         flagged noisy), while the configurations' medians span {}{unit} – {}{unit} ({}×)",
        opt(f("runs_per_configuration")),
        opt(f("cv_median_percent")),
        opt(f("cv_max_percent")),
        opt(r.detail_number("noisy_configurations")),
        opt(f("fastest_seconds")),
        opt(f("slowest_seconds")),
        opt(f("spread")),
    );
    match newest
        .get(s, "repeat")
        .filter(|again| again.status == Status::Ok && again.info.run == r.info.run)
    {
        Some(again) => {
            let _ = writeln!(
                out,
                "; measured again in another session, the medians differ by {} % (MAPE; the \
                 *brute force again* row).",
                opt(again.mape_all_percent)
            );
        }
        None => out.push_str(".\n"),
    }
}

/// Table 7 and the other overheads of one subject.
fn overheads(out: &mut String, newest: &Newest, s: &str) {
    if let Some(r) = newest.get(s, "overhead")
        && r.status == Status::Ok
    {
        let d = serde_json::to_value(&r.details).expect("json");
        let _ = write!(
            out,
            "\nTable 7, instrumentation overhead: native and both instrumented builds run \
             interleaved on {} of {} configurations, {} rounds, medians ({}):\n\n\
             | placement | R | RC per run (mean / max) | instrumented / native (geometric mean, min – max) | without the probes' own cost |\n\
             |---|---|---|---|---|\n",
            opt(r.configurations),
            opt(r.total_configurations),
            get_f64(&d, &["rounds"]).map_or("?".into(), number),
            run_label(r)
        );
        for (key, label) in [
            ("before", "before optimisation (`--no-optimise`)"),
            ("after", "after optimisation"),
        ] {
            let p = |k: &[&str]| {
                let mut path = vec![key];
                path.extend_from_slice(k);
                get_f64(&d, &path)
            };
            let without = match p(&["without_probes_ratio_geometric_mean"]) {
                Some(g) => format!(
                    "{} ({} – {})",
                    number(g),
                    opt(p(&["without_probes_ratio_min"])),
                    opt(p(&["without_probes_ratio_max"]))
                ),
                None => "—".into(),
            };
            let _ = writeln!(
                out,
                "| {label} | {} | {} / {} | {} ({} – {}) | {without} |",
                opt(p(&["regions"])),
                opt(p(&["rc_mean"])),
                opt(p(&["rc_max"])),
                opt(p(&["ratio_geometric_mean"])),
                opt(p(&["ratio_min"])),
                opt(p(&["ratio_max"])),
            );
        }
    }
    let mut lines = Vec::new();
    if let Some(r) = newest.get(s, "crush").filter(|r| r.status == Status::Ok) {
        lines.push(format!(
            "ConfigCrusher's static analysis: {} s, peak memory {} MiB; its instrumented runs \
             over the native medians (measured minutes apart): {}",
            opt(r.analysis_seconds),
            opt(r.detail_number("peak_memory_mib")),
            opt(r.detail_number("over_native_geometric_mean"))
        ));
    }
    for r in newest.of_subject(s) {
        if let (Status::Ok, Some(first), Some(drift)) = (
            &r.status,
            r.details.get("again_of").and_then(Value::as_str),
            r.detail_number("mape_against_first_run_percent"),
        ) {
            lines.push(format!(
                "{}: its model against the first run's (`{first}`), configuration by \
                 configuration: {} % MAPE, the drift its own measurement carries between two \
                 sessions (brute force again: {} %)",
                approach_label(r),
                number(drift),
                opt(newest.get(s, "repeat").and_then(|r| r.mape_all_percent))
            ));
        }
    }
    if let Some(r) = newest.get(s, "comprex").filter(|r| r.status == Status::Ok) {
        lines.push(format!(
            "Comprex: {} taint runs in {} s, {} s per run, {}× the native program on the same \
             workload ({} s, 4 other configurations); its profiled runs over the native \
             medians (the profiler's overhead, before its correction): {}",
            opt(r.detail_number("taint_runs")),
            opt(r.detail_number("taint_seconds")),
            opt(r.detail_number("taint_run_seconds")),
            opt(r.detail_number("taint_slowdown")),
            opt(r.detail_number("native_analysis_workload_seconds")),
            opt(r.detail_number("over_native_geometric_mean"))
        ));
    }
    if let Some(r) = newest.get(s, "family").filter(|r| r.status == Status::Ok) {
        lines.push(format!(
            "family-based: its call-tree runs over the native medians: {}",
            opt(r.detail_number("over_native_geometric_mean"))
        ));
    }
    if !lines.is_empty() {
        out.push_str("\nOther overheads:\n\n");
        for l in lines {
            let _ = writeln!(out, "- {l}");
        }
    }
}

/// What each approach's analysis reported it could not see on this subject: the options its
/// model takes to have no influence without having observed that.
fn blind_spots(out: &mut String, newest: &Newest, s: &str) {
    let names = |r: &Row, k: &str| -> Vec<String> {
        r.details
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(|n| format!("`{n}`")))
            .collect()
    };
    let mut lines = Vec::new();
    if let Some(r) = newest.get(s, "crush").filter(|r| r.status == Status::Ok) {
        let irrelevant = names(r, "irrelevant");
        if !irrelevant.is_empty() {
            lines.push(format!(
                "ConfigCrusher: no tainted decision reads {} (taken to have no influence)",
                irrelevant.join(", ")
            ));
        }
    }
    for (step, label) in [("splat", "SPLat"), ("splat-delayed", "SPLat-delayed")] {
        let Some(r) = newest.get(s, step).filter(|r| r.status == Status::Ok) else {
            continue;
        };
        let unreached = names(r, "unreached");
        if !unreached.is_empty() {
            lines.push(format!(
                "{label}: no taint run saw {} at a decision (taken to have no influence)",
                unreached.join(", ")
            ));
        }
        if r.details.get("complete").and_then(Value::as_bool) == Some(false) {
            lines.push(format!("{label}: the exploration stopped before its end"));
        }
    }
    if let Some(r) = newest.get(s, "family").filter(|r| r.status == Status::Ok) {
        let unmapped = names(r, "unmapped_options");
        let unseen = r.detail_number("unseen_decisions");
        if !unmapped.is_empty() || unseen.is_some_and(|n| n > 0.0) {
            lines.push(format!(
                "family-based: {} option(s) map to no function ({}); {} decisions on options \
                 inside functions, which its model cannot see",
                unmapped.len(),
                if unmapped.is_empty() {
                    "none".into()
                } else {
                    unmapped.join(", ")
                },
                opt(unseen)
            ));
        }
    }
    if !lines.is_empty() {
        out.push_str("\nWhat the analyses report they could not see:\n\n");
        for l in lines {
            let _ = writeln!(out, "- {l}");
        }
    }
}

fn run_label(r: &Row) -> String {
    format!(
        "{}, `{}`{}, load {}",
        &r.date[..r.date.len().min(10)],
        &r.info.commit[..r.info.commit.len().min(7)],
        if r.info.dirty { "+" } else { "" },
        number(r.load_start[0])
    )
}

/// Regenerates `latest.md` in `dir` from every (quick or full) row there.
pub fn write_summary(dir: &Path, order: &[String], quick: bool) -> Result<PathBuf> {
    let rows = read_all(dir)?;
    let path = dir.join(LATEST);
    std::fs::write(&path, summary(&rows, order, quick))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Where README.md's generated table starts and ends.
pub const README_BEGIN: &str =
    "<!-- results: generated by knobs-bench from docs/results; do not edit -->";
pub const README_END: &str = "<!-- end of results -->";
/// Where README.md's generated table of counted instructions starts and ends.
pub const README_COUNTED_BEGIN: &str = "<!-- counted results: generated by knobs-bench from \
    docs/results/rows/metric-instructions; do not edit -->";
pub const README_COUNTED_END: &str = "<!-- end of counted results -->";
/// The directory, under the rows', of the rows of `--metric instructions` runs.
pub const COUNTED_DIR: &str = "metric-instructions";

/// `text` with what lies between the lines `begin` and `end` replaced by `table`.
fn between_markers(text: &str, begin: &str, end: &str, table: &str) -> Result<String> {
    let (before, rest) = text
        .split_once(begin)
        .with_context(|| format!("README.md has no line `{begin}`"))?;
    let (_, after) = rest
        .split_once(end)
        .with_context(|| format!("README.md has no line `{end}`"))?;
    Ok(format!("{before}{begin}\n{table}{end}{after}"))
}

/// README.md with its headline tables regenerated from the rows in `dir`: the timed one
/// from `dir`'s own rows, the counted one from those in its [`COUNTED_DIR`].
pub fn readme_with_table(readme: &str, dir: &Path, order: &[String]) -> Result<String> {
    let timed = headline(&read_all(dir)?, order, false);
    let counted = headline(&read_all(&dir.join(COUNTED_DIR))?, order, false);
    let text = between_markers(readme, README_BEGIN, README_END, &timed)?;
    between_markers(&text, README_COUNTED_BEGIN, README_COUNTED_END, &counted)
}

/// Regenerates README.md's headline tables from the rows in `dir` and its [`COUNTED_DIR`].
pub fn write_readme_table(readme: &Path, dir: &Path, order: &[String]) -> Result<()> {
    let text =
        std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
    let text =
        readme_with_table(&text, dir, order).with_context(|| format!("{}", readme.display()))?;
    std::fs::write(readme, text).with_context(|| format!("writing {}", readme.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::{SCHEMA, append};

    #[test]
    fn reasons_leave_out_the_command() {
        assert_eq!(
            short_reason("`knobs crush --spec x` failed (exit status: 2): no bitcode (log: l.log)"),
            "failed (exit status: 2): no bitcode"
        );
        assert_eq!(
            short_reason(
                "did not finish within the run's --step-timeout of 5 s: stopped `knobs x`"
            ),
            "did not finish within the run's --step-timeout of 5 s"
        );
        assert_eq!(short_reason("plain\nmore"), "plain");
    }

    #[test]
    fn the_summary_takes_the_newest_row() {
        let dir = tempfile::tempdir().unwrap();
        let row = |date: &str, mape: f64| Row {
            schema: SCHEMA,
            subject: "gzip".into(),
            approach: "crush".into(),
            date: date.into(),
            spec: "examples/gzip-whitebox/knobs.toml".into(),
            configurations: Some(24.0),
            total_configurations: Some(48.0),
            lower_bound: Some(24.0),
            measurement_seconds: Some(8.7),
            mape_percent: Some(mape),
            ..Row::default()
        };
        let f = dir.path().join("a.jsonl");
        append(&f, &row("2026-11-23T10:00:00Z", 8.0)).unwrap();
        append(&f, &row("2026-11-24T10:00:00Z", 7.5)).unwrap();
        append(&f, &row("2026-11-22T10:00:00Z", 9.0)).unwrap();
        let path = write_summary(dir.path(), &["gzip".into()], false).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            text.contains("| ConfigCrusher | 24 of 48 (lower bound 24) | 8.70 | — | 0 | 7.50 |"),
            "{text}"
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("| ConfigCrusher |"))
                .count(),
            1
        );
    }

    #[test]
    fn the_summary_gives_a_repeated_approach_its_drift() {
        let dir = tempfile::tempdir().unwrap();
        let row = |approach: &str, mape: f64, details: Value| Row {
            schema: SCHEMA,
            subject: "gzip".into(),
            approach: approach.into(),
            date: "2026-11-27T10:00:00Z".into(),
            spec: "examples/gzip-whitebox/knobs.toml".into(),
            configurations: Some(12.0),
            total_configurations: Some(48.0),
            mape_all_percent: Some(mape),
            details: serde_json::from_value(details).unwrap(),
            ..Row::default()
        };
        let f = dir.path().join("a.jsonl");
        append(&f, &row("repeat", 9.0, serde_json::json!({}))).unwrap();
        append(&f, &row("crush", 7.0, serde_json::json!({}))).unwrap();
        let again = serde_json::json!({
            "approach_kind": "crush",
            "again_of": "crush",
            "mape_against_first_run_percent": 4.25,
        });
        append(&f, &row("crush-again", 8.0, again)).unwrap();
        let text =
            std::fs::read_to_string(write_summary(dir.path(), &["gzip".into()], false).unwrap())
                .unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("- ConfigCrusher again: "))
            .expect(&text);
        assert!(line.contains("first run's (`crush`)"), "{line}");
        assert!(line.contains("4.25 % MAPE"), "{line}");
        assert!(line.contains("(brute force again: 9 %)"), "{line}");
        assert!(text.contains("| ConfigCrusher again |"), "{text}");
    }

    #[test]
    fn the_summary_says_what_the_analyses_did_not_see() {
        let dir = tempfile::tempdir().unwrap();
        let row = |approach: &str, details: Value| Row {
            schema: SCHEMA,
            subject: "bzip2".into(),
            approach: approach.into(),
            date: "2026-11-26T10:00:00Z".into(),
            spec: "examples/bzip2/knobs.toml".into(),
            details: serde_json::from_value(details).unwrap(),
            ..Row::default()
        };
        let f = dir.path().join("a.jsonl");
        let rows = [
            row("crush", serde_json::json!({"irrelevant": []})),
            row(
                "splat",
                serde_json::json!({"unreached": ["quiet"], "complete": true}),
            ),
            row(
                "splat-delayed",
                serde_json::json!({"unreached": [], "complete": false}),
            ),
            row(
                "family",
                serde_json::json!({"unmapped_options": ["level", "small"], "unseen_decisions": 257}),
            ),
        ];
        for r in &rows {
            append(&f, r).unwrap();
        }
        let text =
            std::fs::read_to_string(write_summary(dir.path(), &["bzip2".into()], false).unwrap())
                .unwrap();
        let (_, spots) = text
            .split_once("What the analyses report they could not see:")
            .expect(&text);
        assert!(!spots.contains("ConfigCrusher"), "{spots}");
        assert!(
            spots.contains("- SPLat: no taint run saw `quiet` at a decision"),
            "{spots}"
        );
        assert!(
            spots.contains("- SPLat-delayed: the exploration stopped before its end"),
            "{spots}"
        );
        assert!(
            spots.contains(
                "- family-based: 2 option(s) map to no function (`level`, `small`); 257 decisions"
            ),
            "{spots}"
        );
    }

    #[test]
    fn a_row_with_builds_shows_their_time_apart() {
        let dir = tempfile::tempdir().unwrap();
        let row = Row {
            schema: SCHEMA,
            subject: "lz4-compile-time".into(),
            approach: "brute-force".into(),
            date: "2026-11-29T10:00:00Z".into(),
            spec: "examples/lz4-compile-time/knobs.toml".into(),
            configurations: Some(32.0),
            measurement_seconds: Some(3.9),
            elapsed_seconds: 501.0,
            details: serde_json::from_value(serde_json::json!({
                "builds": 8, "builds_made": 6, "build_seconds": 397.9,
            }))
            .unwrap(),
            ..Row::default()
        };
        append(&dir.path().join("a.jsonl"), &row).unwrap();
        let text = std::fs::read_to_string(
            write_summary(dir.path(), &["lz4-compile-time".into()], false).unwrap(),
        )
        .unwrap();
        assert!(
            text.contains("| 501 (398 s building 6 of 8 programs) |"),
            "{text}"
        );
    }

    #[test]
    fn a_counted_run_says_which_truth_its_white_box_rows_are_compared_with() {
        let dir = tempfile::tempdir().unwrap();
        let row = |details: Value| Row {
            schema: SCHEMA,
            subject: "lz4".into(),
            approach: "crush".into(),
            date: "2026-11-29T10:00:00Z".into(),
            spec: "examples/lz4/knobs.toml".into(),
            details: serde_json::from_value(details).unwrap(),
            ..Row::default()
        };
        let summary = |details: Value| {
            let f = dir.path().join("a.jsonl");
            let _ = std::fs::remove_file(&f);
            append(&f, &row(details)).unwrap();
            std::fs::read_to_string(write_summary(dir.path(), &["lz4".into()], false).unwrap())
                .unwrap()
        };
        let counted =
            summary(serde_json::json!({"ground_truth_build": "the plain counting build"}));
        assert!(counted.contains("**Counted instructions**"), "{counted}");
        let timed = summary(serde_json::json!({}));
        assert!(!timed.contains("**Counted instructions**"), "{timed}");
    }

    #[test]
    fn the_counted_tables_show_the_bundled_examples_and_reach_the_readme() {
        let dir = tempfile::tempdir().unwrap();
        let counted_dir = dir.path().join(COUNTED_DIR);
        std::fs::create_dir(&counted_dir).unwrap();
        let row = |approach: &str, metric: &str, mape: Option<f64>| Row {
            schema: SCHEMA,
            subject: "printer".into(),
            approach: approach.into(),
            date: "2026-11-29T10:00:00Z".into(),
            spec: "examples/printer/knobs.toml".into(),
            configurations: Some(8.0),
            mape_all_percent: mape,
            details: serde_json::from_value(serde_json::json!({ "metric": metric })).unwrap(),
            ..Row::default()
        };
        let timed_rows = dir.path().join("a.jsonl");
        append(&timed_rows, &row("brute-force", "wall_s", None)).unwrap();
        append(&timed_rows, &row("crush", "wall_s", Some(3.5))).unwrap();
        let counted_rows = counted_dir.join("a.jsonl");
        append(&counted_rows, &row("brute-force", "instructions", None)).unwrap();
        append(&counted_rows, &row("crush", "instructions", Some(0.25))).unwrap();
        let order = ["printer".to_string()];

        let readme = format!(
            "intro\n{README_BEGIN}\nSTALE\n{README_END}\n\n{README_COUNTED_BEGIN}\nSTALE\n\
             {README_COUNTED_END}\nrest\n"
        );
        let text = readme_with_table(&readme, dir.path(), &order).unwrap();
        let (timed, counted) = text.split_once(README_COUNTED_BEGIN).unwrap();
        // A bundled example's timed rows measure its sleeps: it stays out of the timed table.
        assert!(!timed.contains("| printer |"), "{timed}");
        let printer_line = |table: &str| {
            table
                .lines()
                .find(|l| l.starts_with("| printer | 8 |"))
                .map(str::to_string)
        };
        assert!(
            printer_line(counted).is_some_and(|l| l.contains(" 0.25 (8) |")),
            "{counted}"
        );
        assert!(!text.contains("STALE"), "{text}");
        assert!(
            text.starts_with("intro\n") && text.ends_with("rest\n"),
            "{text}"
        );

        let latest =
            std::fs::read_to_string(write_summary(&counted_dir, &order, false).unwrap()).unwrap();
        let every_system = latest.split("\n## printer").next().unwrap();
        assert!(
            printer_line(every_system).is_some_and(|l| l.contains(" 0.25 (8) |")),
            "{every_system}"
        );
    }
}
