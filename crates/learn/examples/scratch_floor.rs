use learn::{Learner, Table, train};
fn main() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/datasets/deepperf/LLVM.csv");
    let data = space::formats::load_dataset(&path, None).unwrap();
    let table = Table::new(&data);
    let all: Vec<usize> = (0..table.rows.len()).collect();
    let n = &table.names;
    let main = [0usize, 1, 2, 9];
    let mut terms = vec![];
    for mask in 1u32..16 {
        let f: Vec<String> = (0..4)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| n[main[i]].clone())
            .collect();
        terms.push(f.join("*"));
    }
    let others: Vec<String> = (0..10)
        .filter(|j| !main.contains(j))
        .map(|j| n[j].clone())
        .collect();
    let mut t1 = terms.clone();
    t1.extend(others.iter().cloned());
    let mut t2 = t1.clone();
    for a in 0..10 {
        for b in a + 1..10 {
            let s = format!("{}*{}", n[a], n[b]);
            if !t2.contains(&s) {
                t2.push(s);
            }
        }
    }
    for (name, t) in [
        ("cells", &terms),
        ("cells+additive", &t1),
        ("cells+all pairs", &t2),
    ] {
        for log in [false, true] {
            let spec = format!(
                "ols:{}{}",
                t.join(","),
                if log { ",transform=log" } else { "" }
            );
            let l: Learner = spec.parse().unwrap();
            let m = train(&table, &all, &l, 1).unwrap();
            let p = m.predict(&table, &all);
            let mre: f64 = p
                .iter()
                .zip(&table.performance)
                .map(|(p, a)| ((p - a) / a).abs())
                .sum::<f64>()
                / all.len() as f64
                * 100.0;
            println!("{name} log={log}: in-sample MRE {mre:.3} %");
        }
    }
}
