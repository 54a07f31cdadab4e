//! The HTML report of one run: what the markdown report says, drawn (visual design:
//! KPI strip and candidates, step time per step, breakdown and hot ops, regions by pass,
//! the representative step's timeline, collectives, idle gaps, per-device skew).

use super::{charts, duration, percent, Cell, Page};
use crate::summary::doc::Summary;
use crate::summary::timeline::Timeline;

/// The page of summary `s`, with the timeline of its representative step when the run's
/// tables were at hand (a summary file alone has no timeline).
pub fn page(s: &Summary, timeline: Option<&Timeline>, top_k: usize) -> String {
    let m = &s.run_metadata;
    let name = m.run_id.clone().filter(|r| !r.is_empty()).unwrap_or_else(|| s.source_path.clone());
    let subtitle = format!(
        "{} · {} · summary generated {}",
        if s.source_path.is_empty() { "source unknown" } else { s.source_path.as_str() },
        s.source_format,
        if s.generated_at_utc.is_empty() { "n/a" } else { s.generated_at_utc.as_str() }
    );
    let mut p = Page::new(&format!("profq report · {name}"), &subtitle);

    headline(&mut p, s);
    candidates(&mut p, s);

    let st = &s.step_time;
    p.section("Step time per step", Some("Each bar is a step split into compute, exposed communication and idle; the tick is the step time, coloured by step class; warm-up steps are faded; dashed rules are the steady median and p90."));
    if s.profq_steps.is_empty() {
        p.note(if st.all_steps.count > 0 {
            "This summary has no per-step series (written by another tool or an older profq): summarize the profile again with profq to draw it."
        } else {
            "No steps were found in this profile (no step annotations and no device Steps line)."
        });
    } else {
        let (spec, marks) = charts::step_time(&s.profq_steps, &st.steady_state_steps);
        p.chart("step_time", spec, marks);
    }

    p.section("Time breakdown", Some(&format!("Share of time by category (basis: {}).", s.time_breakdown.duration_basis)));
    let (spec, marks) = charts::breakdown(&[("this run", &s.time_breakdown)]);
    p.chart("breakdown", spec, marks);

    p.section("Hot ops by self time", Some(&format!("The top {top_k} ops by exclusive time over the whole profile.")));
    if s.hot_ops.is_empty() {
        p.note("No device ops in this profile.");
    } else {
        let (spec, marks) = charts::hot_ops(&s.hot_ops, top_k);
        p.chart("hot_ops", spec, marks);
        let rows = s
            .hot_ops
            .iter()
            .take(top_k)
            .map(|o| {
                vec![
                    Cell::text(o.name.clone().unwrap_or_default()),
                    Cell::text(o.category.clone().unwrap_or_default()),
                    Cell::int(o.count),
                    Cell::num(o.exclusive_duration),
                    Cell::num(o.total_duration),
                    Cell::num(o.avg_duration),
                    Cell::text(o.shape_signature.clone().unwrap_or_default()),
                ]
            })
            .collect();
        p.table("hot_ops", &["op", "category", "count", "self (µs)", "total (µs)", "avg (µs)", "shape"], rows);
    }
    if !s.semantic_families.is_empty() {
        p.note("Semantic families (ops grouped by what they compute):");
        let (spec, marks) = charts::families(&s.semantic_families, top_k);
        p.chart("families", spec, marks);
    }

    p.section("Named-scope regions by pass", Some("Icicle per pass: each region under its parent, width = inclusive op self time; hover for the full path."));
    match charts::regions(&s.profq_regions_by_pass) {
        Some((spec, marks)) => p.chart("regions", spec, marks),
        None => p.note("No named scopes in this profile."),
    }

    p.section("Timeline of the representative step", None);
    match timeline {
        Some(t) if !t.marks.is_empty() => {
            let merged = if t.ops > t.marks.len() {
                format!(" Runs of ops too narrow to see are merged into blocks ({} ops as {} bars).", t.ops, t.marks.len())
            } else {
                String::new()
            };
            let cut = if t.truncated { " Only the step's first ops are drawn." } else { "" };
            p.note(&format!("Step {}: every device line.{merged}{cut} `profq export-trace --step {}` opens the full detail in Perfetto.", t.step, t.step));
            let (spec, marks) = charts::timeline(t);
            p.chart("timeline", spec, marks);
        }
        Some(t) => p.note(&format!("Step {} has no device ops.", t.step)),
        None if st.representative_step().is_none() => p.note("No steady step to draw."),
        None => p.note("The timeline needs the run's tables: `profq report INPUT --format html` (or `--run ID`) draws it."),
    }

    p.section("Collectives", Some("Time per collective kind, exposed (not hidden by compute) against overlapped."));
    if s.profq_collectives.is_empty() {
        p.note("No collectives in this profile.");
    } else {
        let rows: Vec<(&str, &_)> = s.profq_collectives.iter().map(|c| ("this run", c)).collect();
        let (spec, marks) = charts::collectives(&rows);
        p.chart("collectives", spec, marks);
    }

    p.section("Largest idle gaps", Some("Idle time on device lines before an op, by the op it is attributed to (the payload after any setup marker)."));
    if s.gap_before_ops.is_empty() {
        p.note("No idle gaps before ops.");
    } else {
        let (spec, marks) = charts::gaps(&s.gap_before_ops, top_k);
        p.chart("gaps", spec, marks);
        let rows = s
            .gap_region_contexts
            .iter()
            .take(top_k)
            .map(|g| {
                vec![
                    Cell::text(g.region_path.clone()),
                    Cell::text(g.op_name.clone().unwrap_or_default()),
                    Cell::int(g.count),
                    Cell::num(g.total_gap_duration),
                    Cell::num(g.avg_gap_duration),
                ]
            })
            .collect();
        p.note("By named-scope region:");
        p.table("gap_regions", &["region", "op", "gaps", "total gap (µs)", "avg gap (µs)"], rows);
    }

    if s.profq_per_device.len() > 1 {
        p.section("Per-device skew", Some("How far each device finishes its share of a steady step after the fastest device (stragglers at a glance)."));
        let (spec, marks) = charts::skew(&s.profq_per_device);
        p.chart("skew", spec, marks);
    }
    if !s.profq_straggler_ranks.is_empty() {
        p.section(
            "Straggler ranks",
            Some("Collectives matched across the ranks of the job: how often each rank arrived last, and its summed lateness behind the first rank to arrive."),
        );
        let rows = s
            .profq_straggler_ranks
            .iter()
            .map(|r| {
                vec![
                    Cell::int(r.rank),
                    Cell::text(r.host.clone().unwrap_or_default()),
                    Cell::int(r.instances),
                    Cell::int(r.times_last),
                    Cell::num(r.lateness_duration),
                ]
            })
            .collect();
        p.table("straggler_ranks", &["rank", "host", "collectives", "times last", "lateness (µs)"], rows);
    }
    p.finish()
}

/// The KPI strip and the quality warnings.
fn headline(p: &mut Page, s: &Summary) {
    let st = &s.step_time.steady_state_steps;
    let tb = &s.time_breakdown;
    let m = &s.run_metadata;
    let devices = match (&m.hardware_type, m.num_devices) {
        (Some(kind), Some(n)) => format!("{n} × {kind}"),
        (None, Some(n)) => format!("{n}"),
        (Some(kind), None) => kind.clone(),
        (None, None) => "n/a".into(),
    };
    let idle = s.profq_device_idle.as_ref().and_then(|d| d.avg_idle_share);
    p.section("At a glance", None);
    p.kpis(&[
        ("steady_median_us", "steady median step", duration(st.median), st.median),
        ("steady_p90_us", "steady p90 step", duration(st.p90), st.p90),
        ("steady_steps", "steady steps", st.count.to_string(), Some(st.count as f64)),
        ("all_steps", "all steps", s.step_time.all_steps.count.to_string(), Some(s.step_time.all_steps.count as f64)),
        ("devices", "devices", devices, m.num_devices.map(|n| n as f64)),
        ("hosts", "hosts", m.num_hosts.map_or("n/a".into(), |h| h.to_string()), m.num_hosts.map(|n| n as f64)),
        ("compute_share", "compute", percent(Some(tb.compute.share_of_total)), Some(tb.compute.share_of_total)),
        ("communication_share", "communication", percent(Some(tb.communication.share_of_total)), Some(tb.communication.share_of_total)),
        ("idle_share", "device idle (steady)", percent(idle), idle),
    ]);
    let warnings = &s.trace_overview.quality_warnings;
    if !warnings.is_empty() {
        let badges: String = warnings.iter().map(|w| format!("<span class=\"badge\">{}</span>", super::esc(w))).collect();
        p.raw(&format!("<p>{badges}</p>"));
    }
}

/// The optimisation candidates: the first three with their evidence, all in a table.
fn candidates(p: &mut Page, s: &Summary) {
    p.section("What to try next", Some("Optimisation candidates, most important first."));
    if s.optimization_candidates.is_empty() {
        p.note("No candidate fired on this profile.");
        return;
    }
    let mut html = String::from("<ol>");
    for c in s.optimization_candidates.iter().take(3) {
        html.push_str(&format!("<li><b>{}</b> — {}", super::esc(&c.title), super::esc(&c.rationale)));
        if !c.evidence.is_empty() {
            html.push_str("<ul>");
            for e in &c.evidence {
                html.push_str(&format!("<li>{}</li>", super::esc(e)));
            }
            html.push_str("</ul>");
        }
        html.push_str("</li>");
    }
    html.push_str("</ol>");
    p.raw(&html);
    let rows = s
        .optimization_candidates
        .iter()
        .map(|c| vec![Cell::text(c.candidate_id.clone()), Cell::text(c.title.clone()), Cell::text(c.suggestions.join(" · "))])
        .collect();
    p.table("candidates", &["id", "title", "suggestions"], rows);
}
