//! DeepPerf's protocol on its six datasets: for each sample size, 30 random samples, learn,
//! predict every other configuration, mean relative error (MRE, %) with its 95 % margin —
//! for every learner, next to the published DECART and DeepPerf numbers.
//!
//!     cargo run --release -p learn --example bench_deepperf [-- --reps 30]
//!         [--learners stepwise,lasso,cart,rf,boost,auto] [--datasets x264,LLVM]

use std::path::PathBuf;
use std::time::Instant;

use learn::experiment::deepperf;
use learn::{Learner, Table};

/// Published MRE (%) per size: (DECART or SPL Conqueror, DeepPerf), from the DeepPerf paper
/// (ICSE 2019, Tables III/IV, as given in `../shared/datasets/README.md`). `None` = NA.
struct Published {
    name: &'static str,
    sizes: &'static [usize],
    baseline: &'static str,
    numbers: &'static [(Option<f64>, f64)],
}

const PUBLISHED: [Published; 6] = [
    Published {
        name: "Apache",
        sizes: &[9, 18, 27, 36, 45],
        baseline: "DECART",
        numbers: &[
            (None, 17.87),
            (Some(15.83), 10.24),
            (Some(11.03), 8.25),
            (Some(9.49), 6.97),
            (Some(7.84), 6.29),
        ],
    },
    Published {
        name: "x264",
        sizes: &[16, 32, 48, 64, 80],
        baseline: "DECART",
        numbers: &[
            (Some(17.71), 10.43),
            (Some(9.31), 3.61),
            (Some(6.37), 2.13),
            (Some(4.26), 1.49),
            (Some(2.94), 0.87),
        ],
    },
    Published {
        name: "BDBJ",
        sizes: &[26, 52, 78, 104, 130],
        baseline: "DECART",
        numbers: &[
            (Some(10.04), 7.25),
            (Some(2.23), 2.07),
            (Some(2.03), 1.73),
            (Some(1.72), 1.67),
            (Some(1.67), 1.61),
        ],
    },
    Published {
        name: "LLVM",
        sizes: &[11, 22, 33, 44, 55],
        baseline: "DECART",
        numbers: &[
            (Some(6.00), 5.09),
            (Some(4.66), 3.87),
            (Some(3.96), 2.54),
            (Some(3.54), 2.27),
            (Some(2.84), 1.99),
        ],
    },
    Published {
        name: "BDBC",
        sizes: &[18, 36, 54, 72, 90],
        baseline: "DECART",
        numbers: &[
            (Some(151.0), 133.6),
            (Some(43.8), 16.77),
            (Some(31.9), 13.1),
            (Some(6.93), 6.95),
            (Some(5.02), 5.82),
        ],
    },
    Published {
        name: "Dune",
        sizes: &[49, 78, 240, 375],
        baseline: "SPLConq",
        numbers: &[
            (Some(20.1), 15.73),
            (Some(22.1), 13.67),
            (Some(10.6), 8.19),
            (Some(18.8), 7.20),
        ],
    },
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let reps: usize = value("--reps").map_or(30, |v| v.parse().expect("--reps N"));
    let seed: u64 = value("--seed").map_or(1, |v| v.parse().expect("--seed S"));
    let learners = Learner::parse_list(
        &value("--learners").unwrap_or_else(|| "stepwise,lasso,cart,rf,boost,auto".into()),
    )
    .expect("learners");
    let only: Option<Vec<String>> =
        value("--datasets").map(|v| v.split(',').map(str::to_string).collect());
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/deepperf");
    assert!(dir.exists(), "{} not found", dir.display());

    println!(
        "DeepPerf protocol: {reps} random samples per size, learn, MRE (%) on all other configurations, ± 95 % margin."
    );
    println!(
        "Columns marked * are published numbers (DeepPerf, ICSE 2019, Tables III/IV; ../shared/datasets/README.md), not measured here."
    );
    println!("Learners:");
    for l in &learners {
        println!("  {:<9} {l}", l.name());
    }
    let started = Instant::now();
    for p in &PUBLISHED {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|n| n == p.name))
        {
            continue;
        }
        let path = dir.join(format!("{}.csv", p.name));
        let data = space::formats::load_dataset(&path, None).expect("dataset loads");
        let table = Table::new(&data);
        let mut cells: Vec<Vec<learn::experiment::SizeResult>> = Vec::new();
        for l in &learners {
            cells.push(deepperf(&table, p.sizes, l, reps, seed).expect("experiment runs"));
        }
        println!();
        println!("{} ({} configurations)", p.name, table.rows.len());
        print!("{:>5}", "size");
        for l in &learners {
            print!(" {:>15}", l.name());
        }
        println!(" {:>9} {:>9}", format!("{}*", p.baseline), "DeepPerf*");
        for (s, size) in p.sizes.iter().enumerate() {
            print!("{size:>5}");
            for c in &cells {
                print!(
                    " {:>15}",
                    format!("{:.2} ± {:.2}", c[s].mean_mre, c[s].margin)
                );
            }
            let (base, deep) = p.numbers[s];
            println!(
                " {:>9} {:>9.2}",
                base.map_or("NA".to_string(), |b| format!("{b:.2}")),
                deep
            );
        }
        print!("{:>5}", "s/exp");
        for c in &cells {
            let mean = c.iter().map(|r| r.seconds).sum::<f64>() / c.len() as f64;
            let max = c.iter().map(|r| r.seconds).fold(0.0, f64::max);
            print!(" {:>15}", format!("{mean:.4} ({max:.3})"));
        }
        println!("   (seconds per experiment: mean over sizes, slowest size in parentheses)");
        print!("{:>5}", "terms");
        for c in &cells {
            print!(
                " {:>15}",
                c.iter()
                    .map(|r| format!("{:.0}", r.mean_size))
                    .collect::<Vec<_>>()
                    .join("/")
            );
        }
        println!("   (terms of linear models, leaves of trees; per size)");
    }
    println!();
    println!("total time: {:.1} s", started.elapsed().as_secs_f64());
}
