//! What `metric = "auto"` reads: CPU time for a CPU-bound configuration, wall time
//! otherwise.

use std::collections::BTreeMap;

use super::*;
use crate::Error;
use crate::spec::Metric;

/// The share of its wall time a configuration's deciding run spends on a CPU (user +
/// system) for `metric = "auto"` to read its CPU time: at least most of it (a CPU-bound program on a
/// machine with a core to spare: 93–100 % here), at most one CPU's worth (no threads in
/// parallel).
pub const CPU_BOUND: (f64, f64) = (0.8, 1.1);

/// What `metric = "auto"` reads for a configuration whose deciding run used `cpu` seconds
/// of user + system time and waited `cpu_wait` seconds for a CPU in `wall` seconds: CPU
/// time when it was on a CPU or waiting for one nearly all the time, and wanted no more than
/// one at once ([`CPU_BOUND`]: the bounds apply to `cpu + cpu_wait`, so that threads in
/// parallel on a loaded machine, where they take turns, still count as parallel), and slept
/// no longer than it was on a CPU; wall time otherwise. CPU time leaves out the time a run waits
/// for a CPU another program holds, so it is far steadier on a shared machine; it would miss
/// sleeps, I/O waits and a second thread's work, which is why such configurations keep wall
/// time. On a quiet machine both are the same for the first kind, so the model reads one
/// quantity: the time the configuration takes.
pub fn auto_metric(cpu: f64, cpu_wait: f64, wall: f64) -> Metric {
    let (lo, hi) = CPU_BOUND;
    let wall = wall.max(1e-9);
    let demand = (cpu + cpu_wait) / wall;
    // Time neither on a CPU nor waiting for one: sleeps and I/O. On a saturated machine a
    // short sleeper's wall time is mostly waits for a CPU after it wakes, so it must also
    // have slept no longer than it computed.
    let slept = (wall - cpu - cpu_wait).max(0.0);
    if (lo..=hi).contains(&demand) && slept <= cpu {
        Metric::Cpu
    } else {
        Metric::Wall
    }
}

impl Store {
    /// What `metric` reads in the selection's runs, and why: itself, or for `auto` what each
    /// configuration's deciding run says ([`Store::deciding_runs`], [`auto_metric`]): `Cpu`
    /// or `Wall` when all agree, `Auto` (each configuration its own) when they differ.
    pub fn resolve_metric(
        &self,
        selection: &Selection,
        metric: Metric,
    ) -> Result<(Metric, String), Error> {
        if metric != Metric::Auto {
            return Ok((metric, format!("{} (as the spec says)", metric.name())));
        }
        let firsts = self.deciding_runs(selection)?;
        if firsts.is_empty() {
            return Ok((Metric::Wall, "wall (auto: nothing measured yet)".into()));
        }
        let cpu = firsts
            .values()
            .filter(|r| r.auto_metric() == Metric::Cpu)
            .count();
        let (lo, hi) = CPU_BOUND;
        let share = |r: &StoredRun| r.cpu_share();
        let low = firsts.values().min_by(|a, b| share(a).total_cmp(&share(b)));
        let high = firsts.values().max_by(|a, b| share(a).total_cmp(&share(b)));
        let (low, high) = (low.expect("one"), high.expect("one"));
        let parallel = firsts
            .values()
            .max_by(|a, b| a.cpu_demand().total_cmp(&b.cpu_demand()))
            .expect("one");
        let odd = if parallel.cpu_demand() > hi {
            format!(
                "`{}` ran on or waited for {:.2} CPUs at once: threads in parallel",
                parallel.configuration,
                parallel.cpu_demand()
            )
        } else {
            let off = firsts
                .values()
                .filter(|r| r.auto_metric() == Metric::Wall)
                .min_by(|a, b| share(a).total_cmp(&share(b)))
                .unwrap_or(low);
            match off.cpu_wait {
                Some(_) => format!(
                    "`{}` used a CPU {:.0} % of its wall time and waited for one {:.0} %: it \
                     sleeps or waits",
                    off.configuration,
                    share(off) * 100.0,
                    off.cpu_wait_share() * 100.0
                ),
                None => format!(
                    "`{}` used a CPU {:.0} % of its wall time: it sleeps, waits or lacked a CPU",
                    off.configuration,
                    share(off) * 100.0
                ),
            }
        };
        let waited = firsts
            .values()
            .map(StoredRun::cpu_wait_share)
            .fold(0.0, f64::max);
        Ok(if cpu == firsts.len() {
            (
                Metric::Cpu,
                format!(
                    "cpu (auto: user + system reached {:.0}–{:.0} % of wall time in every \
                     configuration{})",
                    share(low) * 100.0,
                    share(high) * 100.0,
                    if waited >= 0.01 {
                        format!(
                            ", the rest waiting for a CPU (up to {:.0} %)",
                            waited * 100.0
                        )
                    } else {
                        String::new()
                    }
                ),
            )
        } else if cpu == 0 {
            (Metric::Wall, format!("wall (auto: {odd})"))
        } else {
            (
                Metric::Auto,
                format!(
                    "cpu for the {cpu} configurations that kept one CPU busy ({:.0}–{:.0} % of \
                     wall time), wall for the other {} (auto: {odd})",
                    lo * 100.0,
                    hi * 100.0,
                    firsts.len() - cpu
                ),
            )
        })
    }

    /// Per configuration, the successful run that decides what `auto` reads for it: the one
    /// that spent the largest share of its wall time on a CPU. A busy machine only lowers a
    /// run's share, so one run with a CPU to itself is enough to tell a CPU-bound
    /// configuration, and every session of a spec comes to the same decision.
    pub fn deciding_runs(
        &self,
        selection: &Selection,
    ) -> Result<BTreeMap<String, StoredRun>, Error> {
        let mut deciding: BTreeMap<String, StoredRun> = BTreeMap::new();
        for run in self.runs(selection)?.into_iter().filter(StoredRun::is_ok) {
            match deciding.get(&run.configuration) {
                Some(best) if best.cpu_share() >= run.cpu_share() => {}
                _ => {
                    deciding.insert(run.configuration.clone(), run);
                }
            }
        }
        Ok(deciding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` by a run's seconds on a CPU, waiting for one, and in all.
    #[test]
    fn auto_reads_cpu_time_only_for_one_busy_cpu() {
        // Alone, and sharing its core: on a CPU or waiting for one all the time.
        assert_eq!(auto_metric(0.50, 0.0, 0.51), Metric::Cpu);
        assert_eq!(auto_metric(0.30, 0.60, 0.92), Metric::Cpu);
        // Asleep most of the time.
        assert_eq!(auto_metric(0.01, 0.0, 0.30), Metric::Wall);
        // A short sleep on a saturated machine, then waiting long for a CPU: 85 % on a CPU
        // or waiting, but it slept 24 times as long as it computed.
        assert_eq!(auto_metric(0.002, 0.27, 0.32), Metric::Wall);
        // Two threads taking turns on one CPU: one CPU's worth of work, two CPUs' demand.
        assert_eq!(auto_metric(1.0, 0.6, 1.0), Metric::Wall);
    }
}
