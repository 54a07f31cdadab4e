//! The track layout of an exported window, whatever the file format: per host a process
//! track; under it "profq · steps" first, then each device's own lines and profq's derived
//! tracks (regions by pass, gaps, collectives, exposed communication), then the host's
//! threads; flows from host launches to the device work they started.
//!
//! Slices on one track must nest strictly (Perfetto's rule for slice tracks). Where a
//! line's slices overlap without nesting, the ones that do not fit go on sibling tracks of
//! the same name and rank (lanes), which the Perfetto UI shows merged.

use crate::intervals;
use crate::model::names::is_async_line;
use crate::tables::derive::{exposed_parts, hides_communication};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A string of the layout: an index into [`Layout::strings`].
pub type Str = u32;

/// An annotation value.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Int(i64),
    Float(f64),
    Text(Str),
    Bool(bool),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub uuid: u64,
    pub parent: Option<u64>,
    pub name: String,
    /// How profq computed a derived track.
    pub description: Option<String>,
    /// Order among siblings.
    pub rank: i32,
    /// A process track: (pid, name).
    pub process: Option<(i32, String)>,
}

/// A slice (an instant when `dur` is 0), ns since the run start.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice {
    pub track: u64,
    pub start: i64,
    pub dur: i64,
    pub name: Str,
    pub args: Vec<(&'static str, Arg)>,
    /// Flows that start here (a host launch).
    pub flow_out: Vec<u64>,
    /// A flow that ends here (the device work of a launch).
    pub flow_in: Option<u64>,
}

/// Tracks in declaration order (parents first), and their slices.
#[derive(Debug, Default)]
pub struct Layout {
    pub strings: Vec<String>,
    pub tracks: Vec<Track>,
    pub slices: Vec<Slice>,
    pub flows: usize,
}

/// What profq knows of an event that is a device op.
#[derive(Clone, Debug, Default)]
pub struct OpInfo {
    /// The op's own span, as `ops` has it: its duration is the device-measured one where the
    /// profile has one (TPU), which the event's timeline span is not.
    pub start: i64,
    pub dur: i64,
    pub device: Str,
    pub hlo_op: Option<Str>,
    pub hlo_module: Option<Str>,
    pub program_id: Option<i64>,
    pub scope: Option<Str>,
    pub category: Option<Str>,
    pub pass: Option<Str>,
    pub region_path: Option<Str>,
    pub step: Option<i64>,
    pub flops: Option<f64>,
    pub bytes_accessed: Option<f64>,
    pub self_ns: Option<i64>,
    pub collective: Option<Collective>,
}

#[derive(Clone, Debug, Default)]
pub struct Collective {
    pub kind: Str,
    pub bytes: Option<i64>,
    pub is_async: bool,
    pub overlapped_ns: i64,
    pub exposed_ns: i64,
}

/// An event of the window (`queries/export_events.sql`).
#[derive(Clone, Debug)]
pub struct Event {
    /// Its row in `events` (orders events that start together).
    pub id: i64,
    pub host: Str,
    pub plane: Str,
    pub device: Option<Str>,
    pub line: Str,
    pub line_id: i64,
    pub name: Str,
    pub start: i64,
    pub dur: i64,
    pub correlation: Option<i64>,
    pub op: Option<Box<OpInfo>>,
}

/// A step of the window (`queries/export_steps.sql`).
#[derive(Clone, Debug)]
pub struct StepSpan {
    pub host: Str,
    pub device: Option<Str>,
    pub step: i64,
    pub start: i64,
    pub end: i64,
    pub busy_ns: i64,
    pub communication_ns: i64,
    pub idle_ns: i64,
    pub op_count: i64,
}

/// An idle gap of the window (`queries/export_gaps.sql`).
#[derive(Clone, Debug)]
pub struct Gap {
    pub host: Str,
    pub device: Str,
    pub line: Str,
    pub step: Option<i64>,
    pub start: i64,
    pub gap_ns: i64,
    pub marker_op: Str,
    pub payload_op: Str,
    pub payload_region: Option<Str>,
}

/// Strings of a layout, each stored once.
#[derive(Default)]
pub struct Strings {
    index: HashMap<String, Str>,
    list: Vec<String>,
}

impl Strings {
    pub fn id(&mut self, s: &str) -> Str {
        if let Some(&id) = self.index.get(s) {
            return id;
        }
        let id = self.list.len() as Str;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), id);
        id
    }
    pub fn get(&self, id: Str) -> &str {
        &self.list[id as usize]
    }
}

/// What the derived tracks say of themselves (their descriptions).
const STEPS_ABOUT: &str = "profq: steps from host step annotations or device Steps lines (the steps table), with busy, exposed communication and idle time";
const REGIONS_ABOUT: &str = "profq: named-scope regions by pass, nested; a region spans a run of consecutive ops of the device under its scope path";
const GAPS_ABOUT: &str = "profq: idle gaps before ops on the device's lines (the gaps table), named after the op each gap is attributed to";
const COLLECTIVES_ABOUT: &str = "profq: collectives with their kind, bytes, and time overlapped by compute and exposed";
const EXPOSED_ABOUT: &str = "profq: the parts of collectives not covered by any compute op of the same device";

/// Builds the layout of a window's events, steps and gaps; `window` is [from, to) and the
/// first track is profq's own (window slice, truncation instant).
pub fn layout(
    mut strings: Strings,
    events: Vec<Event>,
    steps: Vec<StepSpan>,
    gaps: Vec<Gap>,
    window: (i64, i64),
    about: &[(&'static str, Arg)],
    truncated: bool,
) -> Layout {
    let mut b = Builder { tracks: Vec::new(), slices: Vec::new(), next: 1 };
    let profq = b.track(None, "profq", -1, Some("profq: the exported window".into()), None);
    let window_name = strings.id("profq · window");
    let mut marks =
        vec![Slice { track: profq, start: window.0, dur: window.1 - window.0, name: window_name, args: about.to_vec(), flow_out: Vec::new(), flow_in: None }];
    if truncated {
        let at = events.iter().map(|e| e.start).max().unwrap_or(window.0);
        marks.push(Slice {
            track: profq,
            start: at,
            dur: 0,
            name: strings.id("truncated: --max-events reached"),
            args: Vec::new(),
            flow_out: Vec::new(),
            flow_in: None,
        });
    }
    b.lay(profq, marks);

    let hosts: BTreeSet<&str> = events.iter().map(|e| strings.get(e.host)).chain(steps.iter().map(|s| strings.get(s.host))).collect();
    let hosts: Vec<String> = hosts.into_iter().map(str::to_string).collect();
    let flows = flows(&events);
    for (pid, host) in hosts.iter().enumerate() {
        let host_id = strings.id(host);
        let process = b.track(None, host, pid as i32, None, Some((pid as i32 + 1, host.clone())));
        let mut rank = 0;
        let mut next_rank = || {
            rank += 1;
            rank
        };

        let steps_track = b.track(Some(process), "profq · steps", next_rank(), Some(STEPS_ABOUT.into()), None);
        let step_slices: Vec<Slice> = steps.iter().filter(|s| s.host == host_id).map(|s| step_slice(&mut strings, s, steps_track)).collect();
        b.lay(steps_track, step_slices);

        // Planes of the host, each with its device (none for host planes).
        let mut devices: BTreeMap<Str, Option<Str>> = BTreeMap::new();
        for e in events.iter().filter(|e| e.host == host_id) {
            let device = devices.entry(e.plane).or_default();
            *device = device.or(e.device);
        }
        // Device planes first, in natural order (GPU:2 before GPU:10), then host planes.
        let mut planes: Vec<(Str, Option<Str>)> = devices.into_iter().collect();
        planes.sort_by_key(|&(plane, device)| (device.is_none(), strings.get(plane).len(), strings.get(plane).to_string()));
        for (plane, device) in planes {
            let plane_name = strings.get(plane).to_string();
            let plane_track = b.track(Some(process), &plane_name, next_rank(), None, None);
            let on_plane: Vec<usize> = (0..events.len()).filter(|&i| events[i].host == host_id && events[i].plane == plane).collect();

            let mut lines: BTreeMap<(i64, Str), Vec<usize>> = BTreeMap::new();
            for &i in &on_plane {
                lines.entry((events[i].line_id, events[i].line)).or_default().push(i);
            }
            // Lines in the profile's order (line id), then by name.
            let mut lines: Vec<((i64, Str), Vec<usize>)> = lines.into_iter().collect();
            lines.sort_by(|((a, x), _), ((b, y), _)| a.cmp(b).then_with(|| strings.get(*x).cmp(strings.get(*y))));
            let mut line_rank = 0;
            for ((_, line), line_events) in lines {
                line_rank += 1;
                let track = b.track(Some(plane_track), strings.get(line), line_rank, None, None);
                let slices = line_events
                    .iter()
                    .map(|&i| event_slice(&events[i], track, flows.out.get(&i).cloned().unwrap_or_default(), flows.into.get(&i).copied()))
                    .collect();
                b.lay(track, slices);
            }
            // profq's tracks of the plane's device, after its lines.
            if let Some(device) = device {
                derived(&mut b, &mut strings, plane_track, line_rank, host_id, device, &events, &gaps);
            }
        }
        // Devices whose ops ran on host planes (CPU captures): their own group of profq's tracks.
        let plane_devices: BTreeSet<Str> = events.iter().filter(|e| e.host == host_id).filter_map(|e| e.device).collect();
        let op_devices: BTreeSet<(usize, String)> = events
            .iter()
            .filter(|e| e.host == host_id)
            .filter_map(|e| e.op.as_ref().map(|o| o.device))
            .filter(|d| !plane_devices.contains(d))
            .map(|d| (strings.get(d).len(), strings.get(d).to_string()))
            .collect();
        for (_, device_name) in op_devices {
            let device = strings.id(&device_name);
            let group = b.track(Some(process), &format!("{device_name} · profq"), next_rank(), None, None);
            derived(&mut b, &mut strings, group, 0, host_id, device, &events, &gaps);
        }
    }
    Layout { strings: strings.list, tracks: b.tracks, slices: b.slices, flows: flows.into.len() }
}

/// The flows of a window: a correlation id seen on host events and on device events of the
/// same host links the first of those host events (the launch) to each device event (the
/// work it started), one flow id per arrow. By event index: the ids leaving it, or the id
/// ending there.
struct Flows {
    out: HashMap<usize, Vec<u64>>,
    into: HashMap<usize, u64>,
}

fn flows(events: &[Event]) -> Flows {
    // Groups in the order their first event comes (events are in time order).
    let mut index: HashMap<(Str, i64), usize> = HashMap::new();
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let Some(c) = e.correlation {
            let g = *index.entry((e.host, c)).or_insert_with(|| {
                groups.push(Default::default());
                groups.len() - 1
            });
            if e.device.is_some() {
                groups[g].1.push(i)
            } else {
                groups[g].0.push(i)
            }
        }
    }
    let mut f = Flows { out: HashMap::new(), into: HashMap::new() };
    let mut id = 0;
    for (host_events, device_events) in groups {
        // Events are in time order: the first host event is the launch.
        let Some(&launch) = host_events.first() else { continue };
        for d in device_events {
            id += 1;
            f.out.entry(launch).or_default().push(id);
            f.into.insert(d, id);
        }
    }
    f
}

fn step_slice(strings: &mut Strings, s: &StepSpan, track: u64) -> Slice {
    let mut args = vec![
        ("step", Arg::Int(s.step)),
        ("dur_ns", Arg::Int(s.end - s.start)),
        ("busy_ns", Arg::Int(s.busy_ns)),
        ("communication_ns", Arg::Int(s.communication_ns)),
        ("idle_ns", Arg::Int(s.idle_ns)),
        ("op_count", Arg::Int(s.op_count)),
    ];
    if let Some(d) = s.device {
        args.push(("device", Arg::Text(d)));
    }
    Slice { track, start: s.start, dur: s.end - s.start, name: strings.id(&format!("step {}", s.step)), args, flow_out: Vec::new(), flow_in: None }
}

/// An event as a slice, with its op's annotations and the flows leaving and ending there.
fn event_slice(e: &Event, track: u64, flow_out: Vec<u64>, flow_in: Option<u64>) -> Slice {
    let mut args = Vec::new();
    if let Some(op) = &e.op {
        for (k, v) in [("hlo_op", op.hlo_op), ("hlo_module", op.hlo_module), ("scope", op.scope), ("category", op.category)] {
            if let Some(v) = v {
                args.push((k, Arg::Text(v)));
            }
        }
        for (k, v) in [("program_id", op.program_id), ("step", op.step), ("self_ns", op.self_ns)] {
            if let Some(v) = v {
                args.push((k, Arg::Int(v)));
            }
        }
        for (k, v) in [("flops", op.flops), ("bytes", op.bytes_accessed)] {
            if let Some(v) = v {
                args.push((k, Arg::Float(v)));
            }
        }
    }
    Slice { track, start: e.start, dur: e.dur, name: e.name, args, flow_out, flow_in }
}

/// profq's tracks of one device under `plane`, after its own lines (ranks from `rank` on):
/// regions by pass, gaps, collectives, exposed communication.
#[allow(clippy::too_many_arguments)]
fn derived(b: &mut Builder, strings: &mut Strings, plane: u64, rank: i32, host: Str, device: Str, events: &[Event], gaps: &[Gap]) {
    let ops: Vec<&Event> = events.iter().filter(|e| e.host == host && e.op.as_ref().is_some_and(|o| o.device == device)).collect();
    let gaps: Vec<&Gap> = gaps.iter().filter(|g| g.host == host && g.device == device).collect();
    let ops = &ops[..];
    let regions = b.track(Some(plane), "profq · regions (pass)", rank + 1, Some(REGIONS_ABOUT.into()), None);
    let slices = region_slices(strings, ops, regions);
    b.lay(regions, slices);

    let gaps_track = b.track(Some(plane), "profq · gaps", rank + 2, Some(GAPS_ABOUT.into()), None);
    let slices = gaps
        .iter()
        .map(|g| {
            let mut args = vec![("gap_ns", Arg::Int(g.gap_ns)), ("marker_op", Arg::Text(g.marker_op)), ("line", Arg::Text(g.line))];
            if let Some(r) = g.payload_region {
                args.push(("region", Arg::Text(r)));
            }
            if let Some(s) = g.step {
                args.push(("step", Arg::Int(s)));
            }
            Slice { track: gaps_track, start: g.start, dur: g.gap_ns, name: g.payload_op, args, flow_out: Vec::new(), flow_in: None }
        })
        .collect();
    b.lay(gaps_track, slices);

    let collectives: Vec<(&Event, &Collective)> = ops.iter().filter_map(|e| Some((*e, e.op.as_ref()?.collective.as_ref()?))).collect();
    let coll_track = b.track(Some(plane), "profq · collectives", rank + 3, Some(COLLECTIVES_ABOUT.into()), None);
    let slices = collectives
        .iter()
        .map(|(e, c)| {
            let mut args = vec![
                ("op", Arg::Text(e.name)),
                ("async", Arg::Bool(c.is_async)),
                ("overlapped_ns", Arg::Int(c.overlapped_ns)),
                ("exposed_ns", Arg::Int(c.exposed_ns)),
            ];
            if let Some(bytes) = c.bytes {
                args.push(("bytes", Arg::Int(bytes)));
            }
            Slice { track: coll_track, start: e.start, dur: e.dur, name: c.kind, args, flow_out: Vec::new(), flow_in: None }
        })
        .collect();
    b.lay(coll_track, slices);

    // Exposed: each collective's parts its device's compute leaves uncovered, by the rule the
    // `collectives` table's `exposed_ns` follows, over the ops' own spans.
    let hides = |o: &OpInfo, line: Str| o.category.is_some_and(|c| hides_communication(strings.get(c), is_async_line(strings.get(line))));
    let busy = intervals::union(ops.iter().filter_map(|e| e.op.as_deref().filter(|o| hides(o, e.line))).map(|o| (o.start, o.start + o.dur)).collect());
    let exposed_track = b.track(Some(plane), "profq · exposed communication", rank + 4, Some(EXPOSED_ABOUT.into()), None);
    let mut slices = Vec::new();
    for (e, c) in &collectives {
        let name = strings.id(&format!("exposed {}", strings.get(c.kind)));
        let op = e.op.as_deref().expect("a collective is an op");
        for (s, end) in exposed_parts(&busy, op.start, op.start + op.dur) {
            slices.push(Slice {
                track: exposed_track,
                start: s,
                dur: end - s,
                name,
                args: vec![("op", Arg::Text(e.name))],
                flow_out: Vec::new(),
                flow_in: None,
            });
        }
    }
    b.lay(exposed_track, slices);
}

/// Nested region slices of a device's ops in start order: the pass, then each component of
/// the op's named-scope path but its last (the primitive); a region spans the run of
/// consecutive ops under it.
fn region_slices(strings: &mut Strings, ops: &[&Event], track: u64) -> Vec<Slice> {
    let mut ordered: Vec<&Event> = ops.to_vec();
    ordered.sort_by_key(|e| (e.start, std::cmp::Reverse(e.dur)));
    // The path of each distinct (pass, region path), as interned components.
    let mut paths: HashMap<(Option<Str>, Option<Str>), Vec<Str>> = HashMap::new();
    let other = strings.id("other");
    let mut open: Vec<(Str, i64, i64)> = Vec::new();
    let mut out = Vec::new();
    let close = |(name, start, end): (Str, i64, i64)| Slice { track, start, dur: end - start, name, args: Vec::new(), flow_out: Vec::new(), flow_in: None };
    for e in ordered {
        let op = e.op.as_ref().expect("ops only");
        let path = paths.entry((op.pass, op.region_path)).or_insert_with(|| {
            let mut path = vec![op.pass.unwrap_or(other)];
            if let Some(r) = op.region_path {
                let text = strings.get(r).to_string();
                let parts: Vec<&str> = text.split('/').filter(|p| !p.is_empty()).collect();
                path.extend(parts[..parts.len().saturating_sub(1)].iter().map(|p| strings.id(p)));
            }
            path
        });
        let common = open.iter().zip(path.iter()).take_while(|(o, p)| o.0 == **p).count();
        while open.len() > common {
            out.push(close(open.pop().expect("open region")));
        }
        let end = e.start + e.dur;
        for o in open.iter_mut() {
            o.2 = o.2.max(end);
        }
        open.extend(path[common..].iter().map(|&p| (p, e.start, end)));
    }
    while let Some(region) = open.pop() {
        out.push(close(region));
    }
    out
}

/// Tracks and slices as they are laid out.
struct Builder {
    tracks: Vec<Track>,
    slices: Vec<Slice>,
    next: u64,
}

impl Builder {
    fn track(&mut self, parent: Option<u64>, name: &str, rank: i32, description: Option<String>, process: Option<(i32, String)>) -> u64 {
        let uuid = self.next;
        self.next += 1;
        self.tracks.push(Track { uuid, parent, name: name.to_string(), description, rank, process });
        uuid
    }

    /// Puts `slices` on track `base`, moving each that would overlap without nesting to the
    /// first lane (a sibling of `base` with its name and rank) where it nests.
    fn lay(&mut self, base: u64, mut slices: Vec<Slice>) {
        // Stable: slices that start together and last as long keep their given order.
        slices.sort_by(|a, b| a.start.cmp(&b.start).then(b.dur.cmp(&a.dur)));
        let template = self.tracks.iter().find(|t| t.uuid == base).expect("declared track").clone();
        // Per lane: its track and the ends of its open slices, innermost last.
        let mut lanes: Vec<(u64, Vec<i64>)> = vec![(base, Vec::new())];
        for mut s in slices {
            if s.dur <= 0 {
                s.track = base;
                self.slices.push(s);
                continue;
            }
            let end = s.start + s.dur;
            let mut placed = None;
            for (track, open) in lanes.iter_mut() {
                while open.last().is_some_and(|&e| e <= s.start) {
                    open.pop();
                }
                if open.last().is_none_or(|&e| e >= end) {
                    open.push(end);
                    placed = Some(*track);
                    break;
                }
            }
            let track = placed.unwrap_or_else(|| {
                let lane = self.track(template.parent, &template.name, template.rank, template.description.clone(), None);
                lanes.push((lane, vec![end]));
                lane
            });
            s.track = track;
            self.slices.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_slices_go_to_lanes_and_nested_ones_stay() {
        let mut b = Builder { tracks: Vec::new(), slices: Vec::new(), next: 1 };
        let t = b.track(None, "line", 1, None, None);
        let s = |start, dur| Slice { track: 0, start, dur, name: 0, args: Vec::new(), flow_out: Vec::new(), flow_in: None };
        // [0,10) holds [2,5); [8,12) overlaps [0,10) without nesting; [10,11) fits after it.
        b.lay(t, vec![s(0, 10), s(2, 3), s(8, 4), s(10, 1), s(5, 0)]);
        assert_eq!(b.tracks.len(), 2, "one extra lane");
        let on = |uuid: u64| b.slices.iter().filter(|x| x.track == uuid).map(|x| (x.start, x.dur)).collect::<Vec<_>>();
        assert_eq!(on(t), [(0, 10), (2, 3), (5, 0), (10, 1)]);
        assert_eq!(on(2), [(8, 4)]);
        assert_eq!(b.tracks[1].name, "line");
    }
}
