//! Interleaved rounds: each measuring step's command runs once per round with
//! `--repetitions ROUND` (its store then holds one more run of every configuration it
//! measures), round after round over the steps, and its last run, with the spec's repetitions,
//! writes its row. A machine whose speed drifts over the run (on this project's hosts, by 5-20 %
//! between sessions minutes apart) then slows or speeds every approach and the ground truth
//! alike, where sessions one after another put that drift into the errors of whichever step
//! measured at a slow moment; *brute force again*, interleaved too, is then the run-to-run
//! noise of a median. No run is added: the same runs are taken in a different order.

use super::*;

impl SubjectRun<'_> {
    /// The rounds the measuring steps are interleaved in: the spec's repetitions (two under
    /// `--quick`); one (no interleaving) under `--sessions`, under `--metric` (a count
    /// repeats exactly) and for a spec in adaptive mode (its rounds depend on its noise).
    pub fn interleaved_rounds(&self) -> Result<u32> {
        if self.settings.sessions || self.settings.metric.is_some() {
            return Ok(1);
        }
        if self.settings.quick {
            return Ok(QUICK_REPETITIONS);
        }
        let spec = measure::SystemSpec::load(&self.spec)
            .with_context(|| format!("reading {}", self.spec.display()))?;
        Ok(if spec.measure.adaptive {
            1
        } else {
            spec.measure.repetitions
        })
    }

    /// Every interleaved step of `plan` measured in rounds 1 to `rounds − 1`, round by round;
    /// the steps' own runs then take the last. A step whose command fails in a round is
    /// left out of the later ones (its own run says what failed); returns those.
    pub fn interleave(&mut self, plan: &[Step], rounds: u32) -> Vec<String> {
        let mut failed: Vec<String> = Vec::new();
        for round in 1..rounds {
            for step in plan.iter().filter(|s| interleaved(s.approach)) {
                if failed.contains(&step.name) {
                    continue;
                }
                self.say(&format!("{}: round {round} of {rounds}", step.name));
                if let Err(e) = self.measure_round(step, round) {
                    eprintln!(
                        "knobs-bench: {}: {}: round {round}: error: {e:#}",
                        self.subject.name, step.name
                    );
                    failed.push(step.name.clone());
                }
            }
        }
        failed
    }

    /// One round of a step: its measuring command with `--repetitions ROUND`; its report
    /// is not read (the step's own run makes the row), its commands and time are kept for
    /// the row.
    fn measure_round(&mut self, step: &Step, round: u32) -> Result<()> {
        self.commands.clear();
        self.repetitions = Some(round);
        let t0 = Instant::now();
        self.deadline = self.settings.step_timeout.map(|t| t0 + t);
        let outcome = self.round_command(step);
        self.deadline = None;
        self.repetitions = None;
        let earlier = self.earlier_rounds.entry(step.name.clone()).or_default();
        earlier.rounds = round;
        earlier.seconds += t0.elapsed().as_secs_f64();
        earlier.commands.append(&mut self.commands);
        outcome
    }

    fn round_command(&mut self, step: &Step) -> Result<()> {
        let (command, delayed) = match step.approach {
            Approach::BruteForce | Approach::Repeat => {
                let name = match step.approach {
                    Approach::BruteForce => "ground-truth",
                    _ => "repeat",
                };
                let (store, sample) = (self.sample_store(name), self.ground_truth.clone());
                return self.measure_sample(&store, &sample, None).map(drop);
            }
            Approach::Crush => ("crush", false),
            Approach::Comprex => ("comprex", false),
            Approach::Splat => ("splat", false),
            Approach::SplatDelayed => ("splat", true),
            Approach::Family => ("family", false),
            other => bail!("{other} is not measured in rounds"),
        };
        let (mut args, _, _) = self.white_box_args(command, step);
        if delayed {
            args.push("--delayed".into());
        }
        self.knobs(&args).map(drop)
    }

    /// A step's earlier rounds into its row: their number and time as details, and their
    /// commands returned (to go before the step's own, so the row reruns the step as it ran).
    pub(super) fn earlier_rounds(&mut self, step: &Step, row: &mut Row) -> Vec<String> {
        let Some(earlier) = self.earlier_rounds.remove(&step.name) else {
            return Vec::new();
        };
        row.detail("interleaved_rounds", earlier.rounds + 1);
        row.detail("earlier_rounds_seconds", earlier.seconds);
        earlier.commands
    }
}

/// What a step's earlier rounds did.
#[derive(Default)]
pub struct EarlierRounds {
    /// The last round run before the step's own.
    rounds: u32,
    seconds: f64,
    commands: Vec<String>,
}

/// Whether a step measures the native program in stores that rounds can top up: the
/// ground truth, its repetition and the white-box approaches. The black-box samples are
/// measured in a session of their own (a sample may depend on an earlier step's), Table 7
/// interleaves its own runs, and Comprex's Table IV measures nothing.
pub fn interleaved(approach: Approach) -> bool {
    matches!(
        approach,
        Approach::BruteForce
            | Approach::Repeat
            | Approach::Crush
            | Approach::Comprex
            | Approach::Splat
            | Approach::SplatDelayed
            | Approach::Family
    )
}
