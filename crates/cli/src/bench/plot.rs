//! Plots with plotters: for every workload a bar chart of client (and
//! server) CPU per I/O per engine next to the headline throughput; for
//! `sweep` also IOPS vs sessions and mean latency vs IOPS, one line per
//! engine. `.png` draws a bitmap, anything else SVG.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::job::RunResult;
use super::report::Report;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

fn register_font() -> Result<(), String> {
    use std::sync::OnceLock;
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err("no TrueType font found for the plot labels (install fonts-dejavu-core)".into())
    })
    .clone()
}

fn color(engine: &str) -> RGBColor {
    match engine {
        "directnfs" => RGBColor(31, 119, 180),
        "libnfs" => RGBColor(214, 39, 40),
        "local" => RGBColor(44, 160, 44),
        _ => RGBColor(100, 100, 100),
    }
}

type DResult = Result<(), String>;

fn e2s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws the report into `path`.
pub fn draw(rep: &Report, path: &Path) -> DResult {
    register_font()?;
    let sweep = rep.workload == "sweep";
    let size = if sweep { (1400, 1000) } else { (1400, 500) };
    let png = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        let root = BitMapBackend::new(path, size).into_drawing_area();
        draw_on(&root, rep)?;
        root.present().map_err(e2s)
    } else {
        let root = SVGBackend::new(path, size).into_drawing_area();
        draw_on(&root, rep)?;
        root.present().map_err(e2s)
    }
}

fn draw_on<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rep: &Report) -> DResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(e2s)?;
    let title = format!(
        "dnfs bench {} — {}",
        rep.workload,
        rep.params.target.as_deref().unwrap_or("local")
    );
    let root = root.titled(&title, ("sans-serif", 22)).map_err(e2s)?;
    // One bar per engine: for sweep, the ops-weighted mean over the steps.
    let engines = engine_order(&rep.runs);
    let per_engine = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<(String, f64)> {
        engines
            .iter()
            .filter_map(|e| {
                let rs: Vec<&RunResult> = rep.runs.iter().filter(|r| &r.engine == e).collect();
                let ops: f64 = rs.iter().map(|r| r.ops as f64).sum();
                let vals: Vec<(f64, f64)> = rs
                    .iter()
                    .filter_map(|r| f(r).map(|v| (v, r.ops as f64)))
                    .collect();
                if vals.is_empty() || ops <= 0.0 {
                    return None;
                }
                let w: f64 = vals.iter().map(|(v, o)| v * o).sum::<f64>()
                    / vals.iter().map(|(_, o)| o).sum::<f64>();
                Some((e.clone(), w))
            })
            .collect()
    };
    let cpu = per_engine(&|r| Some(r.cpu_us_per_io));
    let srv = per_engine(&|r| r.server_cpu_us_per_io);
    if rep.workload == "sweep" {
        let (top, bottom) = root.split_vertically(480);
        let tops = top.split_evenly((1, 2));
        let bots = bottom.split_evenly((1, 2));
        iops_vs_sessions(&tops[0], &rep.runs, &engines)?;
        latency_vs_iops(&tops[1], &rep.runs, &engines)?;
        bars(&bots[0], "client CPU per I/O (us, user+sys)", &cpu)?;
        if srv.is_empty() {
            bars(&bots[1], "IOPS at 1 ms mean latency", &iops1ms(rep))?;
        } else {
            bars(&bots[1], "server CPU per I/O (us)", &srv)?;
        }
    } else {
        let panels = if srv.is_empty() { 2 } else { 3 };
        let areas = root.split_evenly((1, panels));
        let (label, head) = if rep.workload == "scan" {
            ("MB/s", per_engine(&|r| Some(r.mb_per_s)))
        } else {
            ("IOPS", per_engine(&|r| Some(r.iops)))
        };
        bars(&areas[0], label, &head)?;
        if rep.workload == "scan" {
            // 1 MiB I/Os: CPU per GB is the figure that compares
            let cpu_gb = per_engine(&|r| Some(r.cpu_s_per_gb));
            bars(&areas[1], "client CPU seconds per GB (user+sys)", &cpu_gb)?;
            if panels == 3 {
                let srv_gb = per_engine(&|r| {
                    r.server_cpu_s
                        .filter(|_| r.bytes > 0 && r.server_cpu_us_per_io.is_some())
                        .map(|s| s / (r.bytes as f64 / 1e9))
                });
                bars(&areas[2], "server CPU seconds per GB", &srv_gb)?;
            }
        } else {
            bars(&areas[1], "client CPU per I/O (us, user+sys)", &cpu)?;
            if panels == 3 {
                bars(&areas[2], "server CPU per I/O (us)", &srv)?;
            }
        }
    }
    Ok(())
}

/// Axis labels: no decimals for large values.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn iops1ms(rep: &Report) -> Vec<(String, f64)> {
    rep.iops_at_1ms
        .iter()
        .flatten()
        .map(|(e, v)| (e.clone(), v.unwrap_or(0.0)))
        .collect()
}

fn engine_order(runs: &[RunResult]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in runs {
        if !v.contains(&r.engine) {
            v.push(r.engine.clone());
        }
    }
    v
}

fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    vals: &[(String, f64)],
) -> DResult
where
    DB::ErrorType: 'static,
{
    if vals.is_empty() {
        return Ok(());
    }
    let n = vals.len() as i32;
    // `a..b` segmented has a segment per value a..=b: stop at n - 1.
    let ymax = vals.iter().map(|v| v.1).fold(0.0f64, f64::max).max(1e-9) * 1.2;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..ymax)
        .map_err(e2s)?;
    let names: Vec<String> = vals.iter().map(|v| v.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 14))
        .y_label_formatter(&|v| short(*v))
        .draw()
        .map_err(e2s)?;
    chart
        .draw_series(vals.iter().enumerate().map(|(i, (e, v))| {
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(i as i32), 0.0),
                    (SegmentValue::Exact(i as i32 + 1), *v),
                ],
                color(e).filled(),
            );
            r.set_margin(0, 0, 20, 20);
            r
        }))
        .map_err(e2s)?;
    chart
        .draw_series(vals.iter().enumerate().map(|(i, (_, v))| {
            let label = if *v >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            };
            Text::new(
                label,
                (SegmentValue::CenterOf(i as i32), *v + ymax * 0.02),
                ("sans-serif", 14).into_font().color(&BLACK),
            )
        }))
        .map_err(e2s)?;
    Ok(())
}

fn iops_vs_sessions<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[RunResult],
    engines: &[String],
) -> DResult
where
    DB::ErrorType: 'static,
{
    let smax = runs.iter().map(|r| r.sessions).max().unwrap_or(1).max(2) as f64;
    let ymax = runs.iter().map(|r| r.iops).fold(0.0, f64::max).max(1.0) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption("IOPS vs sessions", ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d((0.8f64..smax * 1.25).log_scale(), 0f64..ymax)
        .map_err(e2s)?;
    chart
        .configure_mesh()
        .x_desc("sessions")
        .y_desc("IOPS")
        .label_style(("sans-serif", 14))
        .y_label_formatter(&|v| short(*v))
        .x_label_formatter(&|v| format!("{v:.0}"))
        .draw()
        .map_err(e2s)?;
    for e in engines {
        let mut pts: Vec<(f64, f64)> = runs
            .iter()
            .filter(|r| &r.engine == e)
            .map(|r| (r.sessions as f64, r.iops))
            .collect();
        pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        let c = color(e);
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(e2s)?
            .label(e.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
            .map_err(e2s)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e2s)?;
    Ok(())
}

fn latency_vs_iops<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[RunResult],
    engines: &[String],
) -> DResult
where
    DB::ErrorType: 'static,
{
    let xmax = runs.iter().map(|r| r.iops).fold(0.0, f64::max).max(1.0) * 1.1;
    let ymax = runs
        .iter()
        .map(|r| r.latency_us.mean)
        .fold(0.0, f64::max)
        .max(1100.0)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption("mean latency vs IOPS", ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)
        .map_err(e2s)?;
    chart
        .configure_mesh()
        .x_desc("IOPS")
        .y_desc("mean latency (us)")
        .label_style(("sans-serif", 14))
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .draw()
        .map_err(e2s)?;
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, 1000.0), (xmax, 1000.0)],
            6,
            4,
            BLACK.mix(0.6).stroke_width(1),
        ))
        .map_err(e2s)?;
    for e in engines {
        let mut pts: Vec<(usize, f64, f64)> = runs
            .iter()
            .filter(|r| &r.engine == e)
            .map(|r| (r.sessions, r.iops, r.latency_us.mean))
            .collect();
        pts.sort_by_key(|p| p.0);
        let pts: Vec<(f64, f64)> = pts.into_iter().map(|p| (p.1, p.2)).collect();
        let c = color(e);
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(e2s)?
            .label(e.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
            .map_err(e2s)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e2s)?;
    Ok(())
}
