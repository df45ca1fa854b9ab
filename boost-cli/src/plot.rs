//! The learning-curve plot of `boost train --plot`.

use std::path::Path;

use boost::data::FeatureMatrix;
use boost::learner::RoundLog;
use boost::model::Model;
use boost::{Error, Result};

/// Every (set, metric) series of the evaluation log against the round, as an SVG line chart.
pub(crate) fn learning_curve(history: &[RoundLog], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let plot_error =
        |e: &dyn std::fmt::Display| Error::InvalidParameter { name: "--plot".into(), reason: e.to_string() };
    let Some(first) = history.first() else {
        return Err(plot_error(&"no evaluation log to plot (were there any rounds?)"));
    };
    let series: Vec<(String, Vec<(f64, f64)>)> = (0..first.values.len())
        .map(|k| {
            let (set, metric, _) = &first.values[k];
            let points = history.iter().map(|log| (log.round as f64, log.values[k].2)).collect();
            (format!("{set}-{metric}"), points)
        })
        .collect();
    let (x0, x1) = (first.round as f64, history.last().map_or(1.0, |l| l.round as f64).max(first.round as f64 + 1.0));
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)).filter(|y| y.is_finite());
    let (y0, y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 540)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("learning curve", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, (y0 - pad)..(y1 + pad))
            .map_err(|e| plot_error(&e))?;
        chart.configure_mesh().x_desc("round").draw().map_err(|e| plot_error(&e))?;
        for (i, (name, points)) in series.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| plot_error(&e))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| plot_error(&e))?;
        root.present().map_err(|e| plot_error(&e))?;
    }
    boost::output::write_file(path, svg.as_bytes())
}

/// Features on a SHAP summary plot: the highest mean |SHAP value|.
const SHAP_PLOT_FEATURES: usize = 20;
/// Rows drawn as dots (evenly spaced over the data) on a SHAP summary plot.
const SHAP_PLOT_ROWS: usize = 2000;

/// The SHAP summary plot of `contributions` (`Booster::predict_contributions` of `features`) as
/// SVG: the features ranked by mean |SHAP value| from the top; with one output, each row's value a
/// dot (blue for a low value of the feature, red for a high one, grey when missing), with several
/// the mean |SHAP value| of each output as bars side by side.
pub(crate) fn shap_summary(model: &Model, features: &FeatureMatrix, contributions: &[f32], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let plot_error =
        |e: &dyn std::fmt::Display| Error::InvalidParameter { name: "--shap-plot".into(), reason: e.to_string() };
    let (outputs, width, rows) = (model.num_outputs(), model.num_feature + 1, features.rows());
    if rows == 0 {
        return Err(plot_error(&"no rows to plot"));
    }
    // Mean |SHAP| of each (output, feature).
    let mut mean = vec![0f64; outputs * (width - 1)];
    for (i, values) in contributions.chunks(width).enumerate() {
        let o = i % outputs;
        for (f, v) in values[..width - 1].iter().enumerate() {
            mean[o * (width - 1) + f] += f64::from(v.abs()) / rows as f64;
        }
    }
    let total = |f: usize| (0..outputs).map(|o| mean[o * (width - 1) + f]).sum::<f64>();
    let mut ranked: Vec<usize> = (0..width - 1).collect();
    ranked.sort_by(|&a, &b| total(b).total_cmp(&total(a)).then(a.cmp(&b)));
    ranked.truncate(SHAP_PLOT_FEATURES);
    let shown = ranked.len();
    let y_of = |rank: usize| (shown - rank) as f64;
    let value = |r: usize, f: usize| match features {
        FeatureMatrix::Dense(m) => m.values.get(r * m.cols + f).copied().filter(|_| f < m.cols).unwrap_or(f32::NAN),
        FeatureMatrix::Sparse(m) => {
            let range = m.row_ptr[r]..m.row_ptr[r + 1];
            let at = m.col_indices[range.clone()].iter().rposition(|&c| c as usize == f);
            at.map_or(f32::NAN, |i| m.values[range.start + i])
        }
    };
    let step = rows.div_ceil(SHAP_PLOT_ROWS).max(1);
    let (x0, x1) = if outputs == 1 {
        let xs =
            ranked.iter().flat_map(|&f| (0..rows).step_by(step).map(move |r| f64::from(contributions[r * width + f])));
        xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)))
    } else {
        let mean = &mean;
        (0.0, ranked.iter().flat_map(|&f| (0..outputs).map(move |o| mean[o * (width - 1) + f])).fold(0.0, f64::max))
    };
    let pad = ((x1 - x0) * 0.05).max(1e-9);
    let mut svg = String::new();
    {
        let height = 120 + 28 * shown as u32;
        let root = SVGBackend::with_string(&mut svg, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(&e))?;
        let x_desc = if outputs == 1 { "SHAP value (impact on the margin)" } else { "mean |SHAP value| by output" };
        let mut chart = ChartBuilder::on(&root)
            .caption("SHAP summary", ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(160)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.4..(shown as f64 + 0.6))
            .map_err(|e| plot_error(&e))?;
        let names: Vec<String> = ranked.iter().map(|&f| model.feature_key(f)).collect();
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_labels(shown + 1)
            .y_label_formatter(&|y| {
                let rank = shown as f64 - y.round();
                let ok = (y - y.round()).abs() < 1e-6 && rank >= 0.0 && (rank as usize) < shown;
                if ok {
                    names[rank as usize].clone()
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(|e| plot_error(&e))?;
        if outputs == 1 {
            for (rank, &f) in ranked.iter().enumerate() {
                let column: Vec<f32> = (0..rows).map(|r| value(r, f)).filter(|v| !v.is_nan()).collect();
                let (lo, hi) =
                    column.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
                let dots = (0..rows).step_by(step).enumerate().map(|(k, r)| {
                    let v = value(r, f);
                    let color = if v.is_nan() {
                        RGBColor(160, 160, 160)
                    } else {
                        let t = if hi > lo { f64::from((v - lo) / (hi - lo)) } else { 0.5 };
                        RGBColor((30.0 + 225.0 * t) as u8, 60, (255.0 - 225.0 * t) as u8)
                    };
                    // A fixed jitter by the row's place spreads the dots of one feature vertically.
                    let jitter = ((k * 7919) % 101) as f64 / 101.0 * 0.6 - 0.3;
                    Circle::new((f64::from(contributions[r * width + f]), y_of(rank) + jitter), 2, color.filled())
                });
                chart.draw_series(dots).map_err(|e| plot_error(&e))?;
            }
        } else {
            let bar = 0.8 / outputs as f64;
            for o in 0..outputs {
                let color = Palette99::pick(o).to_rgba();
                let bars = ranked.iter().enumerate().map(|(rank, &f)| {
                    let y = y_of(rank) - 0.4 + bar * o as f64;
                    Rectangle::new([(0.0, y), (mean[o * (width - 1) + f], y + bar)], color.filled())
                });
                chart
                    .draw_series(bars)
                    .map_err(|e| plot_error(&e))?
                    .label(format!("output {o}"))
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| plot_error(&e))?;
        }
        root.present().map_err(|e| plot_error(&e))?;
    }
    boost::output::write_file(path, svg.as_bytes())
}
