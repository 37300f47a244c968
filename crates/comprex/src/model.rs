//! Local and global models from region times (paper §III.C): per region, the measurements
//! grouped by the subspace of its partition they fall in and averaged; each subspace's
//! average times its characteristic function (a sum of disjoint cubes, each a product of
//! literals) expanded into influence terms; local models summed into the global one; small
//! terms reported as trivial; and the partition-debugging check of §V.D.

use std::collections::{BTreeMap, BTreeSet};

use biodivine_lib_bdd::Bdd;
use model::{Factor, InfluenceModel, ModelFile, Region, SourceSpan, Term, Threshold};
use space::{Configuration, OptionId, ValidConfigurations};

use crate::Error;
use crate::explore::RegionPartition;
use crate::partition::{CubeLiteral, Encoding, Partition};

/// One measured configuration: self time per region (seconds), as a profiler reports it.
/// A region missing from the map did not run in this configuration (time 0).
#[derive(Clone, Debug, PartialEq)]
pub struct RegionTimes {
    pub configuration: Configuration,
    pub seconds: BTreeMap<String, f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelSettings {
    /// Terms with |β| below this many seconds are trivial: dropped and reported.
    pub trivial_below: f64,
    /// A subspace whose measurements vary with a coefficient of variation above this flags
    /// its region (§V.D)…
    pub cv_above: f64,
    /// …if the region takes at least this many seconds in some measured configuration.
    pub significant_above: f64,
    /// Regions too cheap to measure every subspace of (`run::Options::cheap_below`): a
    /// subspace of theirs no configuration was measured in takes the mean of the region's
    /// measured configurations, and is listed in [`ComprexModel::approximated`].
    pub approximate: BTreeSet<String>,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            trivial_below: 0.001,
            cv_above: 0.1,
            significant_above: 0.001,
            approximate: BTreeSet::new(),
        }
    }
}

/// A term left out of a model for being below the threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct TrivialTerm {
    /// The region whose local model had it; `None` for a term of the global model (the sum of
    /// the regions' terms, pruned after it is composed).
    pub region: Option<String>,
    pub term: Term,
}

/// A region whose partition may be incomplete: configurations in one subspace, which should
/// all behave alike, took noticeably different times.
#[derive(Clone, Debug, PartialEq)]
pub struct SuspectRegion {
    pub region: String,
    /// The subspace with the largest variation, as text.
    pub subspace: String,
    pub cv: f64,
    pub measurements: usize,
}

#[derive(Clone, Debug)]
pub struct ComprexModel {
    /// Global terms and the regions' local models.
    pub file: ModelFile,
    pub trivial: Vec<TrivialTerm>,
    pub suspects: Vec<SuspectRegion>,
    /// Subspaces of cheap regions no configuration was measured in, `(region, subspace)`:
    /// they take the mean of the region's measured configurations.
    pub approximated: Vec<(String, String)>,
}

/// Builds the local models of `regions` (one granularity's partitions) from `times`, and the
/// global model as their sum. A region that appears only in `times` has the trivial
/// partition (a constant model). Every subspace needs at least one measured configuration.
pub fn build_model(
    valid: &ValidConfigurations,
    regions: &[RegionPartition],
    times: &[RegionTimes],
    settings: &ModelSettings,
) -> Result<ComprexModel, Error> {
    let enc = Encoding::new(valid);
    if let Some(t) = times.iter().find(|t| !valid.is_valid(&t.configuration)) {
        return Err(Error::InvalidConfiguration(
            valid.space().format_configuration(&t.configuration),
        ));
    }
    let whole = Partition::whole(&enc);
    let choices = instrumented::reference_choices(valid.space())?;
    let mut ids: Vec<&str> = regions.iter().map(|r| r.id.as_str()).collect();
    ids.extend(
        times
            .iter()
            .flat_map(|t| t.seconds.keys().map(String::as_str)),
    );
    ids.sort_unstable();
    ids.dedup();

    let mut local = Vec::new();
    let mut trivial = Vec::new();
    let mut suspects = Vec::new();
    let mut approximated = Vec::new();
    for id in ids {
        let found = regions.iter().find(|r| r.id == id);
        let parts: Vec<(&Bdd, &Bdd, String)> = match found {
            Some(r) => r
                .subspaces
                .iter()
                .map(|s| (s.subspace.bdd(), s.subspace.description(), s.text.clone()))
                .collect(),
            None => whole
                .parts()
                .iter()
                .map(|s| (s.bdd(), s.description(), "⊤".to_string()))
                .collect(),
        };
        let region_time = |t: &RegionTimes| t.seconds.get(id).copied().unwrap_or(0.0);
        let mut averages = Vec::with_capacity(parts.len());
        let mut worst: Option<SuspectRegion> = None;
        for (bdd, description, text) in &parts {
            let samples: Vec<f64> = times
                .iter()
                .filter(|t| enc.contains(bdd, &t.configuration))
                .map(region_time)
                .collect();
            let samples = if samples.is_empty() && settings.approximate.contains(id) {
                approximated.push((id.to_string(), text.clone()));
                times.iter().map(region_time).collect()
            } else {
                samples
            };
            if samples.is_empty() {
                return Err(Error::Unmeasured {
                    region: id.to_string(),
                    subspace: text.clone(),
                });
            }
            let mean = samples.iter().sum::<f64>() / samples.len() as f64;
            averages.push((*description, mean));
            if let Some(cv) = coefficient_of_variation(&samples, mean)
                && worst.as_ref().is_none_or(|w| cv > w.cv)
            {
                worst = Some(SuspectRegion {
                    region: id.to_string(),
                    subspace: text.clone(),
                    cv,
                    measurements: samples.len(),
                });
            }
        }
        let significant = times
            .iter()
            .map(region_time)
            .any(|s| s >= settings.significant_above);
        if let Some(w) = worst
            && significant
            && w.cv > settings.cv_above
        {
            suspects.push(w);
        }
        // Against a reference member: a subspace's cube names every value of a numeric
        // option (`MODE=0 ∧ MODE≠1`) and the members of alternative groups.
        let terms = influence_form(&enc, &averages).against_reference(&choices);
        local.push(Region {
            id: id.to_string(),
            location: found.and_then(location),
            options: found.map_or_else(Vec::new, |r| r.options.clone()),
            terms,
        });
    }
    // Composed before anything is pruned: terms trivial in every region can add up to one
    // that is not (§V's threshold is on the model's terms, not the regions').
    let mut file = ModelFile::compose(InfluenceModel::new(), local);
    trivial.extend(
        file.terms
            .prune(Threshold::Absolute(settings.trivial_below))
            .into_iter()
            .map(|term| TrivialTerm { region: None, term }),
    );
    for region in &mut file.regions {
        trivial.extend(
            region
                .terms
                .prune(Threshold::Absolute(settings.trivial_below))
                .into_iter()
                .map(|term| TrivialTerm {
                    region: Some(region.id.clone()),
                    term,
                }),
        );
    }
    file.provenance.insert("approach".into(), "comprex".into());
    Ok(ComprexModel {
        file,
        trivial,
        suspects,
        approximated,
    })
}

/// Sample standard deviation over the mean; `None` with fewer than two samples. A zero mean
/// with spread is infinitely variable.
fn coefficient_of_variation(samples: &[f64], mean: f64) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (samples.len() - 1) as f64;
    let sd = var.sqrt();
    Some(if mean.abs() > 0.0 {
        sd / mean.abs()
    } else if sd > 0.0 {
        f64::INFINITY
    } else {
        0.0
    })
}

/// Influence form of a piecewise-constant function: `Σ value · χ(description)`, each
/// characteristic function written as a sum of disjoint cubes and each cube as a product of
/// literals (`o` for a selected option, `1 − o` for a deselected one; value indicators for
/// numeric options), expanded. Coefficients that cancel to rounding noise are left out.
pub fn influence_form(enc: &Encoding, parts: &[(&Bdd, f64)]) -> InfluenceModel {
    let space = enc.valid().space();
    let factor = |l: &CubeLiteral| {
        let o = space.option(l.option);
        if o.is_binary() {
            Factor::Option(o.name.clone())
        } else {
            Factor::Equals(o.name.clone(), o.numeric_value(l.value))
        }
    };
    let mut sums: BTreeMap<String, Term> = BTreeMap::new();
    for (description, value) in parts {
        for cube in enc.cubes(description) {
            // `o≠w` beside `o=v` adds nothing (`[o=v]·(1 − [o=w]) = [o=v]`, the product of
            // two values being contradictory), but would double the terms: cubes of one-hot
            // options carry such literals (SQLite's single configurations: 16 times the
            // terms, minutes of expanding).
            let fixed: Vec<OptionId> = cube.iter().filter(|l| l.holds).map(|l| l.option).collect();
            let cube: Vec<&CubeLiteral> = cube
                .iter()
                .filter(|l| l.holds || !fixed.contains(&l.option))
                .collect();
            // Product of literals: a negative literal (1 − f) doubles the terms.
            let mut terms: Vec<(Vec<Factor>, f64)> = vec![(Vec::new(), *value)];
            for l in cube {
                let f = factor(l);
                if l.holds {
                    terms.iter_mut().for_each(|(fs, _)| fs.push(f.clone()));
                } else {
                    let negated: Vec<(Vec<Factor>, f64)> = terms
                        .iter()
                        .map(|(fs, c)| {
                            let mut fs = fs.clone();
                            fs.push(f.clone());
                            (fs, -c)
                        })
                        .collect();
                    terms.extend(negated);
                }
            }
            for (fs, c) in terms {
                let term = Term::from_factors(fs, c);
                // Two different values of one numeric option never hold together.
                let contradictory = term.options.windows(2).any(|w| {
                    matches!((&w[0], &w[1]), (Factor::Equals(a, _), Factor::Equals(b, _)) if a == b)
                });
                if contradictory {
                    continue;
                }
                sums.entry(term.label())
                    .and_modify(|t| t.value += term.value)
                    .or_insert(term);
            }
        }
    }
    let scale = parts.iter().map(|(_, v)| v.abs()).fold(0.0, f64::max);
    InfluenceModel::from_terms(
        sums.into_values()
            .filter(|t| t.value.abs() > 1e-9 * scale.max(f64::MIN_POSITIVE)),
    )
}

/// Where a region's decisions are: one file, the span of their lines, and the function if
/// they share one.
fn location(region: &RegionPartition) -> Option<SourceSpan> {
    let first = region.decisions.first()?;
    if region.decisions.iter().any(|d| d.file != first.file) {
        return None;
    }
    // Line 0: a decision without debug location, which says nothing of the span.
    let lines = region.decisions.iter().map(|d| d.line).filter(|&l| l > 0);
    let (lo, hi) = (lines.clone().min()?, lines.max()?);
    let function = region
        .decisions
        .iter()
        .all(|d| d.method == first.method)
        .then(|| first.method.clone());
    Some(SourceSpan {
        file: first.file.clone(),
        lines: [lo, hi],
        function,
    })
}
