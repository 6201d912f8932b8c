//! `ptmp plot FILE -o OUT.svg`: the pictures a trigger physicist looks at
//! first, from any recording, drawn with the `plotters` library in one
//! SVG: TrigPrims as channel against time (an event display), histograms
//! of their ADC sums and of their time over threshold, and the rate of
//! sets per detector id over the recording.

use super::{fail, parse_format};
use crate::common::{CliError, CliResult};
use plotters::prelude::*;
use ptmp_formats::{Format, Record};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct PlotArgs {
    /// The recording (.mcap, .parquet, anything else a czmqat dump).
    pub file: PathBuf,
    /// The picture to write, an .svg file.
    #[arg(short = 'o', long)]
    pub output: PathBuf,
    /// Read the file as this format whatever its extension.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<Format>,
    /// The data clock in MHz, to put times in milliseconds (PTMP's
    /// protoDUNE clock is 50 MHz, DUNE's 62.5).
    #[arg(long, value_name = "MHZ", default_value_t = 50.0)]
    pub clock_mhz: f64,
    /// Most TrigPrims drawn in the event display (evenly chosen beyond it,
    /// and said in its title); the histograms count every one.
    #[arg(long, default_value_t = 20_000)]
    pub max_points: usize,
    /// The picture's width and height in pixels.
    #[arg(long, value_name = "WxH", default_value = "1400x1000", value_parser = parse_dims)]
    pub size: (u32, u32),
}

fn parse_dims(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("{s:?}: give WIDTHxHEIGHT in pixels, e.g. 1400x1000");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    if !(200..=20_000).contains(&w) || !(200..=20_000).contains(&h) {
        return Err(format!("{s:?}: each side must be 200 to 20000 pixels"));
    }
    Ok((w, h))
}

/// What the pictures are drawn from.
#[derive(Default)]
struct Gathered {
    /// (tstart, channel) of every TrigPrim.
    tps: Vec<(u64, u32)>,
    adcsum: Vec<u32>,
    tspan: Vec<u32>,
    /// Each set's tstart by detid.
    sets: BTreeMap<u32, Vec<u64>>,
}

fn gather(path: &Path, given: Option<Format>) -> CliResult<Gathered> {
    let mut r = ptmp_formats::open(path, given).map_err(fail)?;
    let mut g = Gathered::default();
    let mut rec = Record::default();
    let mut set = ptmp_data::TPSet::default();
    while r.read_into(&mut rec).map_err(fail)? {
        if ptmp_data::wire::decode_frames(&rec.frames, &mut set).is_err() {
            continue;
        }
        g.sets.entry(set.detid).or_default().push(set.tstart);
        for tp in &set.tps {
            g.tps.push((tp.tstart, tp.channel));
            g.adcsum.extend(tp.adcsum);
            g.tspan.extend(tp.tspan);
        }
    }
    if g.sets.is_empty() {
        return Err(CliError::fail(format!(
            "{}: holds no TPSets to plot",
            path.display()
        )));
    }
    Ok(g)
}

pub fn run(a: &PlotArgs) -> CliResult {
    if !(a.clock_mhz.is_finite() && a.clock_mhz > 0.0) {
        return Err(CliError::usage(format!(
            "--clock-mhz {}: must be a positive number",
            a.clock_mhz
        )));
    }
    let ext = a.output.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !ext.eq_ignore_ascii_case("svg") {
        return Err(CliError::usage(format!(
            "{}: ptmp plot writes SVG; name an .svg file (a browser or rsvg-convert makes a PNG of it)",
            a.output.display()
        )));
    }
    let g = gather(&a.file, a.format)?;
    draw(a, &g).map_err(|e| CliError::fail(format!("{}: {e}", a.output.display())))?;
    eprintln!(
        "ptmp plot: {} TPSets, {} TrigPrims of {} into {}",
        g.sets.values().map(Vec::len).sum::<usize>(),
        g.tps.len(),
        a.file.display(),
        a.output.display()
    );
    Ok(())
}

type Res = Result<(), Box<dyn std::error::Error>>;

fn draw(a: &PlotArgs, g: &Gathered) -> Res {
    let root = SVGBackend::new(&a.output, a.size).into_drawing_area();
    root.fill(&WHITE)?;
    let title = format!(
        "{}",
        a.file.file_name().unwrap_or_default().to_string_lossy()
    );
    let root = root.titled(&title, ("sans-serif", 24))?;
    let panes = root.split_evenly((2, 2));
    let t0 = g
        .sets
        .values()
        .flatten()
        .chain(g.tps.iter().map(|t| &t.0))
        .min()
        .copied()
        .unwrap_or(0);
    let ms = |t: u64| (t - t0) as f64 / (a.clock_mhz * 1e3);
    event_display(&panes[0], a, g, &ms)?;
    histogram(&panes[1], "ADC sum of each TrigPrim", "ADC sum", &g.adcsum)?;
    histogram(
        &panes[2],
        "Time over threshold of each TrigPrim",
        "tspan (ticks)",
        &g.tspan,
    )?;
    rates(&panes[3], g, &ms)?;
    root.present()?;
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn event_display(area: &Area, a: &PlotArgs, g: &Gathered, ms: &dyn Fn(u64) -> f64) -> Res {
    let step = g.tps.len().div_ceil(a.max_points.max(1)).max(1);
    let shown: Vec<(f64, f64)> = g
        .tps
        .iter()
        .step_by(step)
        .map(|&(t, c)| (ms(t), f64::from(c)))
        .collect();
    let caption = if step > 1 {
        format!(
            "TrigPrims: channel against time (every {step}th of {})",
            g.tps.len()
        )
    } else {
        format!("TrigPrims: channel against time ({})", g.tps.len())
    };
    let (x1, y0, y1) = shown
        .iter()
        .fold((1e-3f64, f64::MAX, f64::MIN), |(x, lo, hi), &(t, c)| {
            (x.max(t), lo.min(c), hi.max(c))
        });
    let (y0, y1) = if y0 > y1 { (0.0, 1.0) } else { (y0, y1 + 1.0) };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x1 * 1.02, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_desc("channel")
        .draw()?;
    chart.draw_series(shown.iter().map(|&p| Circle::new(p, 1, BLUE.filled())))?;
    Ok(())
}

fn histogram(area: &Area, caption: &str, what: &str, values: &[u32]) -> Res {
    const BINS: u32 = 50;
    let max = values.iter().copied().max().unwrap_or(0);
    let width = (max / BINS + 1).max(1);
    let mut counts = vec![0u64; BINS as usize + 1];
    for &v in values {
        counts[(v / width) as usize] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{caption} ({} values)", values.len()),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            0f64..f64::from(width * (max / width + 1)),
            0f64..top as f64 * 1.05,
        )?;
    chart
        .configure_mesh()
        .x_desc(what)
        .y_desc("TrigPrims")
        .draw()?;
    chart.draw_series(
        counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let x0 = f64::from(i as u32 * width);
                Rectangle::new(
                    [(x0, 0.0), (x0 + f64::from(width), c as f64)],
                    BLUE.mix(0.7).filled(),
                )
            }),
    )?;
    Ok(())
}

fn rates(area: &Area, g: &Gathered, ms: &dyn Fn(u64) -> f64) -> Res {
    const BINS: usize = 100;
    let end = g
        .sets
        .values()
        .flatten()
        .map(|&t| ms(t))
        .fold(1e-3f64, f64::max);
    let bin_ms = end / BINS as f64;
    let mut lines = Vec::new();
    let mut top = 1.0f64;
    for (&detid, starts) in &g.sets {
        let mut counts = vec![0u64; BINS];
        for &t in starts {
            // The last set starts the last bin's end: it counts in that bin.
            counts[((ms(t) / bin_ms) as usize).min(BINS - 1)] += 1;
        }
        let pts: Vec<(f64, f64)> = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| ((i as f64 + 0.5) * bin_ms, c as f64 / (bin_ms / 1e3)))
            .collect();
        top = pts.iter().map(|p| p.1).fold(top, f64::max);
        lines.push((detid, pts));
    }
    let mut chart = ChartBuilder::on(area)
        .caption("TPSets per second by detector id", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..end * 1.02, 0.0..top * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("time (ms)")
        .y_desc("sets/s")
        .draw()?;
    for (i, (detid, pts)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))?
            .label(format!("detid {detid}"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
