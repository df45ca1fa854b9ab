//! The learning-curve plot of `boost train --plot`.

use std::path::Path;

use boost::learner::RoundLog;
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
