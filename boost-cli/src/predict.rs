//! `boost predict`, `boost eval`, `boost importance` and `boost dump`: a loaded model (on a data
//! file).

use std::path::Path;

use boost::model::{DumpFormat, FeatureMap, ImportanceType, Model};
use boost::{Booster, DMatrix, Device, Error, Params, PredictOptions, Result};

use crate::args::{DataArgs, DumpArgs, EvalArgs, ImportanceArgs, PredictArgs};
use crate::read::{previous_categories, read, ForModel};
use crate::{parse_range, print_line};

/// The model at `model`, and `data` read for it (with the training file's string codes, matched to
/// its feature count and names).
fn load(model: &Path, data: &Path, input: &DataArgs, has_label: bool) -> Result<(Booster, DMatrix)> {
    let booster = Booster::load_model(model)?;
    let categories = previous_categories(Some(booster.model()))?;
    let for_model = ForModel { has_label, ..ForModel::new(booster.model(), categories.as_ref()) };
    let (data, _) = read(data, input, input.side_files(), &for_model)?;
    Ok((booster, DMatrix::from_dataset(data)?))
}

pub(crate) fn predict(args: PredictArgs) -> Result<()> {
    let (booster, data) = load(&args.model, &args.data, &args.input, !args.no_label)?;
    let (begin, end) = parse_range(&args.iteration_range)?;
    let device = Params::from_pairs(&[("device", args.device.as_str())])?.device;
    if device != Device::Cpu {
        eprintln!("boost: predicting on {}", booster.open_device(device)?);
    }
    let options = PredictOptions::default().iteration_range(begin, end).device(device);
    if args.approx_contribs && !(args.contribs || args.interactions) {
        let reason = "explains with Saabas' approximation: give it with --contribs or --interactions";
        return Err(Error::InvalidParameter { name: "--approx-contribs".into(), reason: reason.into() });
    }
    let options = if args.approx_contribs { options.approximate() } else { options };
    let mut header = None;
    let values: Vec<String> = if args.leaf {
        booster.predict_leaf(&data, &options)?.iter().map(u32::to_string).collect()
    } else if args.contribs || args.interactions {
        let names = explanation_columns(booster.model(), args.interactions)?;
        let values = match args.interactions {
            false => booster.predict_contributions(&data, &options)?,
            true => booster.predict_interactions(&data, &options)?,
        };
        if let Some(path) = &args.shap_plot {
            let features =
                data.features().ok_or_else(|| Error::InvalidData("a SHAP plot needs rows in memory".into()))?;
            crate::plot::shap_summary(booster.model(), features, &values, path)?;
        }
        header = Some(names);
        values.iter().map(f32::to_string).collect()
    } else {
        let options = if args.margin { options.margin() } else { options };
        booster.predict(&data, &options)?.iter().map(f32::to_string).collect()
    };
    let per_row = (values.len() / data.rows().max(1)).max(1);
    let mut text = String::with_capacity(values.len() * 12);
    if let Some(header) = header {
        text.push_str(&header);
    }
    for row in values.chunks(per_row) {
        text.push_str(&row.join(","));
        text.push('\n');
    }
    match &args.output {
        Some(path) if path.as_os_str() != "-" => boost::output::write_file(path, text.as_bytes())?,
        _ => print_line(text.trim_end_matches('\n')),
    }
    Ok(())
}

/// The header line of explanations: a column a feature (by name, or `f<index>`) and `bias`, or a
/// column a pair `a*b`; a multi-output model's columns prefixed by the output (`1:f0`).
fn explanation_columns(model: &Model, interactions: bool) -> Result<String> {
    let mut features: Vec<String> = (0..model.num_feature).map(|f| model.feature_key(f)).collect();
    features.push("bias".into());
    let per_output: Vec<String> = match interactions {
        false => features.clone(),
        true => features.iter().flat_map(|a| features.iter().map(move |b| format!("{a}*{b}"))).collect(),
    };
    let outputs = model.num_outputs();
    let columns = (0..outputs)
        .flat_map(|o| per_output.iter().map(move |c| if outputs > 1 { format!("{o}:{c}") } else { c.clone() }));
    // Writing to memory fails only on a name the CSV writer refuses.
    let failed = |e: &dyn std::fmt::Display| Error::InvalidData(format!("the explanation's header: {e}"));
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(columns).map_err(|e| failed(&e))?;
    let bytes = writer.into_inner().map_err(|e| failed(&e.error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub(crate) fn eval(args: EvalArgs) -> Result<()> {
    let (booster, data) = load(&args.model, &args.data, &args.input, true)?;
    let metrics: Vec<&str> = args.metrics.iter().map(String::as_str).collect();
    for (name, value) in booster.evaluate(&data, &metrics)? {
        print_line(&format!("{name}:{value:.6}"));
    }
    Ok(())
}

pub(crate) fn dump(args: DumpArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let format = DumpFormat::parse(&args.format).map_err(|_| Error::InvalidParameter {
        name: "--format".into(),
        reason: format!("`{}`: use text or json", args.format),
    })?;
    let fmap = args.fmap.as_ref().map(FeatureMap::load).transpose()?;
    let text = model.dump_text(fmap.as_ref(), args.with_stats, format)?;
    match &args.output {
        Some(path) => boost::output::write_file(path, text.as_bytes()),
        None => {
            print_line(text.trim_end_matches('\n'));
            Ok(())
        }
    }
}

pub(crate) fn importance(args: ImportanceArgs) -> Result<()> {
    let booster = Booster::load_model(&args.model)?;
    let kind: ImportanceType = args
        .kind
        .parse()
        .map_err(|_| Error::InvalidParameter { name: "--type".into(), reason: format!("`{}`", args.kind) })?;
    let mut scores = booster.feature_importance(kind)?;
    scores.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.feature.cmp(&b.feature)));
    for s in scores {
        print_line(&format!("{}\t{}", s.key(), s.score));
    }
    Ok(())
}
