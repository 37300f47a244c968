//! Benchmark: counting, uniform sampling and t-wise sampling on large constrained spaces,
//! with sample sizes next to published references and lower bounds.
//!
//!     cargo run --release -p space --example bench_sampling [-- OPTIONS...]
//!
//! OPTIONS: the sizes of the generated spaces (default: 100 300 600). The generated spaces
//! are feature models shaped like real ones (a tree with mandatory and optional features,
//! alternative and or-groups, numeric options) plus random cross-tree clauses, from a fixed
//! seed. If `../shared/datasets` is beside the repository, x264 and LLVM are reported too.

use std::path::PathBuf;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use space::sampling::covering_lower_bound;
use space::{ConfigSpace, GroupKind, OptionId, Strategy, ValidConfigurations, load_space, sample};

/// A feature model with `n` binary options (and n/25 numeric ones) and n/10 cross-tree clauses.
fn generated(n: usize, seed: u64) -> ConfigSpace {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut s = ConfigSpace::new(format!("generated-{n}"));
    let root = s.add_binary("root", None, true).unwrap();
    let mut open = vec![root];
    let mut made = 1;
    while made < n {
        let parent = open[rng.gen_range(0..open.len())];
        let kind = rng.gen_range(0..10);
        let size = rng.gen_range(2..6).min(n - made);
        let mut members = Vec::new();
        for _ in 0..size.max(1) {
            let mandatory = kind >= 8 && rng.gen_bool(0.3);
            let id = s
                .add_binary(&format!("f{made}"), Some(parent), mandatory)
                .unwrap();
            members.push(id);
            made += 1;
        }
        match kind {
            0..=2 if members.len() > 1 => s
                .add_group(GroupKind::Alternative, Some(parent), members.clone())
                .unwrap(),
            3..=4 if members.len() > 1 => s
                .add_group(GroupKind::Or, Some(parent), members.clone())
                .unwrap(),
            _ => {}
        }
        open.extend(members);
    }
    for i in 0..n / 25 {
        let values: Vec<f64> = (0..rng.gen_range(2..6)).map(|v| (v * 4) as f64).collect();
        s.add_numeric(&format!("num{i}"), &values).unwrap();
    }
    let binary: Vec<OptionId> = s.ids().filter(|id| s.option(*id).is_binary()).collect();
    let mut added = 0;
    while added < n / 10 {
        let k = rng.gen_range(2..4);
        let lits: Vec<String> = (0..k)
            .map(|_| {
                let o = binary[rng.gen_range(1..binary.len())];
                format!(
                    "{}{}",
                    if rng.gen_bool(0.6) { "!" } else { "" },
                    s.option(o).name
                )
            })
            .collect();
        let mut trial = s.clone();
        trial
            .add_constraint(&lits.join(" | "), "generated")
            .unwrap();
        // Keep the space satisfiable.
        if ValidConfigurations::new(&trial).is_ok() {
            s = trial;
            added += 1;
        }
    }
    s
}

fn report(space: &ConfigSpace, reference: &[(usize, &str)]) {
    let t0 = Instant::now();
    let valid = ValidConfigurations::new(space).unwrap();
    let compile = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let count = valid.count();
    let counting = t0.elapsed().as_secs_f64();
    let digits = count.to_string().len();
    println!(
        "\n{}: {} options, {} constraints, BDD {} nodes; compile {compile:.2}s, count {counting:.3}s: {} valid configurations ({digits} digits)",
        space.name,
        space.len(),
        space.constraints().len(),
        valid.bdd_size(),
        if digits > 30 {
            format!("{}…", &count.to_string()[..12])
        } else {
            count.to_string()
        }
    );
    for strategy in [
        Strategy::Random(100),
        Strategy::Distance(100),
        Strategy::FeatureWise,
        Strategy::TWise(1),
        Strategy::TWise(2),
    ] {
        let t0 = Instant::now();
        let s = sample(&valid, &strategy, 1).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        assert!(s.configurations.iter().all(|c| valid.is_valid(c)));
        let mut line = format!(
            "  {:<12} {:>5} configurations in {secs:>6.2}s",
            strategy.to_string(),
            s.configurations.len()
        );
        if let Strategy::TWise(t) = strategy {
            let c = s.coverage.unwrap();
            line += &format!(
                ", covers {}/{} {t}-tuples ({} impossible)",
                c.covered, c.valid_tuples, c.invalid_tuples
            );
            if let Some(lb) = covering_lower_bound(&valid, t) {
                line += &format!(", lower bound {lb}");
            }
            if let Some((_, r)) = reference.iter().find(|(rt, _)| *rt == t) {
                line += &format!(", reference: {r}");
            }
        }
        println!("{line}");
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("sizes are numbers"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100, 300, 600]
    } else {
        sizes
    };
    let shared =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/splconqueror");
    if shared.exists() {
        // SPL Conqueror's t-wise sizes for x264 (../shared/datasets/README.md): 12 / 65 / 212.
        let x264 = load_space(&shared.join("x264/FeatureModel.xml")).unwrap();
        report(&x264, &[(1, "SPL Conqueror 12"), (2, "SPL Conqueror 65")]);
        let llvm = load_space(&shared.join("LLVM/FeatureModel.xml")).unwrap();
        report(&llvm, &[]);
    } else {
        println!("({} not found: skipping x264 and LLVM)", shared.display());
    }
    for n in sizes {
        report(&generated(n, 42), &[]);
    }
}
