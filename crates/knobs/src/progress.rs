//! Progress on stderr: a bar with an ETA while measuring (on a terminal), and every note and
//! failure as a line.

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use instrumented::Reporter;
use measure::campaign::{CampaignReport, ConfigurationStatus, Event};

/// The CLI's [`Reporter`]: lines go above the bar (or straight to stderr without a terminal).
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub fn new() -> Progress {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} runs, ETA {eta}  {wide_msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        Progress { bar }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl Reporter for Progress {
    fn note(&mut self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn measurement(&mut self, event: Event<'_>) {
        match event {
            Event::Planned { runs } => self.bar.set_length(runs),
            Event::Note(line) => self.note(line),
            Event::Starting { configuration } => self.bar.set_message(shown(configuration)),
            Event::Ran {
                configuration,
                result,
                ..
            } => {
                if !result.escaped.is_empty() {
                    self.note(&format!(
                        "`{configuration}`: processes that left the run's process group still \
                         held its output when it ended, and were killed: {}",
                        result.escaped.join("; ")
                    ));
                }
                self.bar.inc(1)
            }
            Event::Done {
                configuration,
                status,
            } => match status {
                ConfigurationStatus::Failed { why, stderr_tail } => {
                    let last = stderr_tail.lines().last().unwrap_or("");
                    self.note(&format!(
                        "failed: `{configuration}`: {why}{}",
                        if last.is_empty() {
                            String::new()
                        } else {
                            format!(": {last}")
                        }
                    ));
                }
                ConfigurationStatus::Measured {
                    summary,
                    noisy: true,
                    new_runs,
                } if *new_runs > 0 => self.note(&format!(
                    "noisy: `{configuration}`: coefficient of variation {:.1} % over {} runs",
                    summary.cv * 100.0,
                    summary.n
                )),
                _ => {}
            },
        }
    }
}

/// A configuration as shown to a person: the empty one has a name.
pub fn shown(configuration: &str) -> String {
    space::shown_configuration(configuration).to_string()
}

/// Runs a campaign with a progress bar; failures and noisy configurations are reported as
/// they happen, also when not on a terminal.
pub fn with_progress(
    run: impl FnOnce(&mut dyn FnMut(Event)) -> Result<CampaignReport>,
) -> Result<CampaignReport> {
    let mut progress = Progress::new();
    run(&mut |event| progress.measurement(event))
}
