//! The depth-first search over reached options (SPLat's exploration).
//!
//! The stack holds the options the current path reached, in order, each with its value and
//! the values already tried. After a run, options it reached that are not on the stack are
//! pushed, in the order reached, with the values they had; then the most recent option with
//! an untried value that the space's constraints allow (given the options before it) takes
//! that value, everything after it is dropped, and the next configuration is that prefix
//! completed with the fewest selected options. The search ends when no option on the stack
//! has an untried value: every combination of reached options has been explored once.
//!
//! A configuration is run only when its run could add a choice: when every option off the
//! stack has only one value the constraints allow with the stack's, whatever a deterministic
//! run reached beyond the stack could not branch, so its path is the stack and the program
//! is not run. That spares the run after flipping the last option of a path that reached
//! every free option (half the runs of a program that reads every option at start-up); after
//! an earlier option flips, the options after it are off the stack and only a run can say
//! whether the new path reaches them.

use serde::Serialize;
use space::{Configuration, Literal, OptionId, ValidConfigurations};

use crate::Error;

/// When the program has *reached* an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// When it first reads it (SPLat).
    Read,
    /// When its value first reaches a decision, a branch or what the dynamic taint analysis
    /// counts as one (SPLat-delayed).
    Decision,
}

/// One explored configuration and the options its path reached, in order, with their
/// values in it.
#[derive(Clone, Debug)]
pub struct Path {
    pub configuration: Configuration,
    pub reached: Vec<Literal>,
}

/// What [`explore`] ran.
#[derive(Clone, Debug)]
pub struct Exploration {
    pub paths: Vec<Path>,
    /// False when the search stopped at its limit of runs with combinations unexplored.
    pub complete: bool,
    /// How many paths came from running the program (the others were known from the stack).
    pub runs: usize,
}

struct Frame {
    option: OptionId,
    value: u32,
    tried: Vec<bool>,
}

/// Explores `valid`'s configurations depth-first over the options `run` reports reached (in
/// order), at most `max_runs` runs.
pub fn explore(
    valid: &ValidConfigurations,
    max_runs: usize,
    mut run: impl FnMut(&Configuration) -> Result<Vec<OptionId>, String>,
) -> Result<Exploration, Error> {
    let space = valid.space();
    let mut stack: Vec<Frame> = Vec::new();
    let mut paths: Vec<Path> = Vec::new();
    let mut runs = 0;
    loop {
        if paths.len() >= max_runs {
            return Ok(Exploration {
                paths,
                complete: false,
                runs,
            });
        }
        let prefix: Vec<Literal> = stack.iter().map(|f| (f.option, f.value)).collect();
        let configuration = complete(valid, &prefix)
            .ok_or_else(|| Error::Invalid("the space has no valid configuration".into()))?;
        let reached = if can_branch_off_stack(valid, &stack, &prefix) {
            runs += 1;
            run(&configuration).map_err(|cause| Error::Run {
                run: paths.len() + 1,
                configuration: space.format_configuration(&configuration),
                cause,
            })?
        } else {
            stack.iter().map(|f| f.option).collect()
        };
        let mut unique: Vec<OptionId> = Vec::with_capacity(reached.len());
        for o in reached {
            if !unique.contains(&o) {
                unique.push(o);
            }
        }
        // A deterministic program reaches every option on the stack again: up to them, its
        // path depended only on their values. (Their order may differ: a program that parses
        // `-v` as `verbose++` reads verbose at once when it is given, later otherwise.)
        if let Some(missing) = stack.iter().find(|f| !unique.contains(&f.option)) {
            return Err(Error::Nondeterministic {
                configuration: space.format_configuration(&configuration),
                missing: space.option(missing.option).name.clone(),
            });
        }
        for &o in &unique {
            if stack.iter().any(|f| f.option == o) {
                continue;
            }
            let value = configuration.0[o.index()];
            let mut tried = vec![false; space.option(o).arity()];
            tried[value as usize] = true;
            stack.push(Frame {
                option: o,
                value,
                tried,
            });
        }
        paths.push(Path {
            configuration,
            reached: stack.iter().map(|f| (f.option, f.value)).collect(),
        });
        // Backtrack to the most recent option with an untried value the constraints allow.
        loop {
            let Some(top) = stack.last() else {
                return Ok(Exploration {
                    paths,
                    complete: true,
                    runs,
                });
            };
            let mut literals: Vec<Literal> = stack[..stack.len() - 1]
                .iter()
                .map(|f| (f.option, f.value))
                .collect();
            let next = (0..top.tried.len() as u32).find(|v| {
                !top.tried[*v as usize] && {
                    literals.push((top.option, *v));
                    let ok = valid.allows(&literals);
                    literals.pop();
                    ok
                }
            });
            let top = stack.last_mut().expect("checked above");
            match next {
                Some(v) => {
                    top.tried[v as usize] = true;
                    top.value = v;
                    break;
                }
                None => {
                    stack.pop();
                }
            }
        }
    }
}

/// Whether some option off the stack has two values the constraints allow with `prefix`
/// (the stack's literals): only then can a run reach a choice the stack does not have.
fn can_branch_off_stack(valid: &ValidConfigurations, stack: &[Frame], prefix: &[Literal]) -> bool {
    let space = valid.space();
    let mut literals = prefix.to_vec();
    space
        .ids()
        .filter(|o| stack.iter().all(|f| f.option != *o))
        .any(|o| {
            let allowed = (0..space.option(o).arity() as u32)
                .filter(|v| {
                    literals.push((o, *v));
                    let ok = valid.allows(&literals);
                    literals.pop();
                    ok
                })
                .take(2)
                .count();
            allowed > 1
        })
}

/// The valid configuration with the prefix's values and otherwise the fewest selected
/// options (SPLat's defaults: what the path has not reached stays off).
fn complete(valid: &ValidConfigurations, prefix: &[Literal]) -> Option<Configuration> {
    let mut bdd = valid.bdd().clone();
    for l in prefix {
        bdd = bdd.and(&valid.literal(*l));
    }
    valid.extreme_in(&bdd, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use space::ConfigSpace;

    fn space(names: &[&str]) -> ConfigSpace {
        let mut s = ConfigSpace::new("t");
        for n in names {
            s.add_binary(n, None, false).unwrap();
        }
        s
    }

    /// Fig. 2 lines 1–21 of the ConfigCrusher journal: A is read, then C only when A is on
    /// (inside foo), then B; D–J are never read on this path.
    #[test]
    fn running_example_explores_six_configurations() {
        let s = space(&["A", "B", "C", "D"]);
        let valid = ValidConfigurations::new(&s).unwrap();
        let id = |n: &str| s.find(n).unwrap();
        let e = explore(&valid, 100, |c| {
            let mut r = vec![id("A")];
            if c.0[0] == 1 {
                r.push(id("C"));
            }
            r.push(id("B"));
            Ok(r)
        })
        .unwrap();
        assert!(e.complete);
        assert_eq!(e.paths.len(), 6);
        let mut configs: Vec<String> = e
            .paths
            .iter()
            .map(|p| s.format_configuration(&p.configuration))
            .collect();
        configs.sort();
        configs.dedup();
        assert_eq!(configs.len(), 6, "{configs:?}");
        assert!(e.paths.iter().all(|p| p.configuration.0[3] == 0));
    }

    #[test]
    fn options_read_at_start_explore_everything_and_constraints_prune() {
        let mut s = space(&["A", "B", "C"]);
        s.add_constraint("!(A & B)", "test").unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let all: Vec<OptionId> = s.ids().collect();
        let mut calls = 0;
        let e = explore(&valid, 100, |_| {
            calls += 1;
            Ok(all.clone())
        })
        .unwrap();
        // 8 combinations, 2 with A and B both on are invalid.
        assert_eq!(e.paths.len(), 6);
        assert!(e.paths.iter().all(|p| valid.is_valid(&p.configuration)));
        // Every run reached every option, so flipping the last one (C) needs no run; after
        // B or A flips, C is off the stack again and a run must say whether it is reached.
        assert_eq!((calls, e.runs), (3, 3));
        let mut table: Vec<Vec<Literal>> = e.paths.iter().map(|p| p.reached.clone()).collect();
        table.sort();
        table.dedup();
        assert_eq!(table.len(), 6);
        assert!(e.paths.iter().all(|p| p.reached.len() == 3));
    }

    #[test]
    fn runs_stop_only_when_no_option_off_the_stack_can_branch() {
        // C is fixed by A (A -> C): once A is on, nothing off the stack can take two values.
        let mut s = space(&["A", "B", "C"]);
        s.add_constraint("A -> C", "test").unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let (a, b) = (s.find("A").unwrap(), s.find("B").unwrap());
        let mut calls = 0;
        let e = explore(&valid, 100, |_| {
            calls += 1;
            Ok(vec![a, b])
        })
        .unwrap();
        // With A off, C is free, so A=0 B=0 and A=0 B=1 are run; with A on, B is free until
        // the run of A=1 B=0 reaches it, and then A=1 B=1 needs no run.
        assert_eq!(e.paths.len(), 4);
        assert_eq!((calls, e.runs), (3, 3));
        let last = e.paths.last().unwrap();
        assert_eq!(last.reached, [(a, 1), (b, 1)]);
        assert_eq!(last.configuration.0, [1, 1, 1]);
    }

    #[test]
    fn a_path_that_loses_an_option_is_an_error_and_the_limit_is_kept() {
        // C, never reached, keeps every configuration run.
        let s = space(&["A", "B", "C"]);
        let valid = ValidConfigurations::new(&s).unwrap();
        let (a, b) = (s.find("A").unwrap(), s.find("B").unwrap());
        // The order may change with the values (an option read while parsing it) ...
        let mut calls = 0;
        let e = explore(&valid, 100, |_| {
            calls += 1;
            Ok(if calls == 1 { vec![a, b] } else { vec![b, a] })
        })
        .unwrap();
        assert_eq!(e.paths.len(), 4);
        // ... but a path that no longer reaches an option it reached is not explorable.
        let mut calls = 0;
        let err = explore(&valid, 100, |_| {
            calls += 1;
            Ok(if calls == 1 { vec![a, b] } else { vec![a] })
        })
        .unwrap_err();
        assert!(matches!(err, Error::Nondeterministic { .. }), "{err}");
        let e = explore(&valid, 3, |_| Ok(vec![a, b])).unwrap();
        assert_eq!((e.paths.len(), e.complete), (3, false));
    }

    #[test]
    fn numeric_options_try_every_value() {
        let mut s = space(&["A"]);
        s.add_numeric("level", &[1.0, 5.0, 9.0]).unwrap();
        let valid = ValidConfigurations::new(&s).unwrap();
        let level = s.find("level").unwrap();
        let a = s.find("A").unwrap();
        // A is read only at level 9.
        let e = explore(&valid, 100, |c| {
            Ok(if c.0[level.index()] == 2 {
                vec![level, a]
            } else {
                vec![level]
            })
        })
        .unwrap();
        assert_eq!(e.paths.len(), 4);
    }
}
