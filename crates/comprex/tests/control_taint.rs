//! Which branches open control taint (`pipeline::ControlTaint`), on a program that checks
//! option A once (`if (!supported(A)) return 2;`, never taken) before `work`, whose loop runs
//! as many times as B says. Every branch opening control taint (the paper's), the check puts A
//! into the control taint of everything after it, so `work` is partitioned by A and B; with
//! two-way branches only, the check went one way in every taint run and opens none: `work`
//! is partitioned by B alone, and the report names the check.

use comprex::Granularity;
use comprex::pipeline::{ControlTaint, Explored};
use measure::SystemSpec;

const MAIN: &str = r#"
#include <string.h>
#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name
OPTION(A);
OPTION(B);
static volatile long sink;
static int supported(int a) { return a == 0 || a == 1; }
static void work(int n) {
    for (int i = 0; i < n; i++)
        sink += i;
}
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-A")) A = 1;
        if (!strcmp(argv[i], "-B")) B = 1;
    }
    if (!supported(A))
        return 2;
    work(B ? 2000 : 1000);
    return 0;
}
"#;

const SPEC: &str = r#"
name = "one-way"
[build]
sources = ["main.c"]
[run]
program = "./one-way"
args = ["{options}"]
[[workload]]
name = "default"
[[option]]
name = "A"
on = ["-A"]
[[option]]
name = "B"
on = ["-B"]
"#;

fn explored(dir: &std::path::Path, control: ControlTaint) -> Explored {
    std::fs::write(dir.join("main.c"), MAIN).unwrap();
    std::fs::write(dir.join("knobs.toml"), SPEC).unwrap();
    let spec = SystemSpec::load(&dir.join("knobs.toml")).unwrap();
    let settings = instrumented::Settings::new(dir.join("work"));
    let workload = spec.analysis_workload().unwrap();
    let granularities = [Granularity::Method];
    comprex::pipeline::explore_tracking(
        &spec,
        &settings,
        workload,
        &granularities,
        control,
        64,
        &mut |_, _| {},
    )
    .unwrap()
}

fn subspaces_of(explored: &Explored, region: &str) -> Vec<String> {
    let r = explored
        .exploration
        .region(Granularity::Method, region)
        .unwrap();
    r.subspaces.iter().map(|s| s.text.clone()).collect()
}

#[test]
fn a_branch_that_went_one_way_in_every_run_opens_no_control_taint() {
    let dir = tempfile::tempdir().unwrap();
    let every = explored(dir.path(), ControlTaint::EveryBranch);
    assert_eq!(
        subspaces_of(&every, "work").len(),
        4,
        "{:?}",
        subspaces_of(&every, "work")
    );
    assert_eq!((every.explorations, every.one_way.len()), (1, 0));

    let two_way = explored(dir.path(), ControlTaint::TwoWayBranches);
    assert_eq!(subspaces_of(&two_way, "work"), ["B", "¬B"]);
    // The check in main (line 17) went one way in every run; `supported`'s own branch
    // (a == 0) went both ways, and main's loop over the arguments and its tests of them too.
    let sites: Vec<(&str, u32)> = two_way
        .one_way
        .iter()
        .map(|b| (b.site.method.as_str(), b.site.line))
        .collect();
    assert_eq!(sites, [("main", 17)]);
    assert_eq!(two_way.explorations, 2);
    assert!(two_way.exploration.configurations.len() <= every.exploration.configurations.len());
}
