//! The ConfigCrusher stages after the analysis, as the tests run them: instrument, measure
//! the compressed configurations into a store in `dir`, and build the model.

use measure::{Store, SystemSpec};
use model::ModelFile;

pub fn instrument_measure_model(
    dir: &std::path::Path,
    spec: &SystemSpec,
    settings: &instrumented::Settings,
    analysed: &configcrusher::Analysed,
) -> (configcrusher::Instrumented, ModelFile) {
    let instrumented = configcrusher::instrument(spec, analysed, settings).unwrap();
    let store = Store::open(&dir.join("knobs.db")).unwrap();
    let workload = spec.workload(None).unwrap();
    let report = configcrusher::measure_configurations(
        &store,
        settings,
        spec,
        workload,
        &instrumented,
        &analysed.compression.configurations,
        &mut |_| {},
    )
    .unwrap();
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let model = configcrusher::build_model(&store, spec, workload, analysed, &instrumented.variant)
        .unwrap();
    (instrumented, model)
}
