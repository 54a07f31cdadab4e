//! The layout pass: each plane's name, `profile_start_time` and whether a device plane has
//! device-op events, and each line's header and event bytes, read without decoding an event;
//! and the release of file pages already read.

use super::{map_entry, plane_kind, stat_id_and_value, value_i64, Fields, HashMap, LineEvents, PlaneKind, Result, EVENTS_PER_MARK, NO_STR};

/// Drops bytes of the file that were read and are not needed again from memory (the
/// caller's mapping), so that RSS holds what is decoded rather than what was read.
pub type Release<'r> = dyn Fn(&[u8]) + Sync + 'r;

/// Planes of more bytes than this together are released as they are scanned.
pub(super) const RELEASE_SCANNED_ABOVE: usize = 256 << 20;

/// Bytes read in a walk over a line before they are released ([`Release`]).
pub(super) const RELEASE_BYTES: usize = 8 << 20;

/// Releases `bytes[*from..to]` once it reaches [`RELEASE_BYTES`] (or when `done`).
pub(super) fn release_read(bytes: &[u8], from: &mut usize, to: usize, done: bool, release: &Release<'_>) {
    if to > *from && (done || to - *from >= RELEASE_BYTES) {
        release(&bytes[*from..to]);
        *from = to;
    }
}

/// One plane of an XSpace, located but not decoded.
pub struct PlaneRef<'a> {
    pub bytes: &'a [u8],
    /// Offset of `bytes` in the file (for error messages).
    pub off: usize,
    pub name: String,
    pub kind: PlaneKind,
    /// A device plane with events on a device-op line (`XLA Ops`, `Stream #N`).
    pub has_device_ops: bool,
}

/// The top level of an XSpace: where its planes are, and what the host says about itself.
pub struct Layout<'a> {
    pub planes: Vec<PlaneRef<'a>>,
    pub hostnames: Vec<String>,
    /// XSpace errors and warnings, as quality warnings.
    pub notes: Vec<String>,
    /// The host's profile start (ns since epoch), from the `profile_start_time` plane stat.
    pub start_epoch: Option<i64>,
}

/// Reads the XSpace's top level and each plane's header, skipping the events, so that the
/// planes can then be decoded a group at a time ([`decode_planes`]). `scanned` sees each
/// plane's bytes once read (the caller may drop them from memory).
pub fn scan<'a>(bytes: &'a [u8], scanned: &mut dyn FnMut(&[u8])) -> Result<Layout<'a>> {
    let mut layout = Layout { planes: Vec::new(), hostnames: Vec::new(), notes: Vec::new(), start_epoch: None };
    let mut f = Fields::new(bytes);
    while let Some((field, value, off)) = f.next_field()? {
        match field {
            1 => {
                let plane = scan_plane(value.as_bytes(), off, &mut layout.start_epoch)?;
                scanned(plane.bytes);
                layout.planes.push(plane);
            }
            2 | 3 => {
                let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
                let kind = if field == 2 { "error" } else { "warning" };
                layout.notes.push(format!("xspace {kind}: {text}"));
            }
            4 => layout.hostnames.push(String::from_utf8_lossy(value.as_bytes()).into_owned()),
            _ => {}
        }
    }
    Ok(layout)
}

/// A slice of the file and its offset in the file.
pub(super) type Located<'a> = (&'a [u8], usize);

/// An XPlane's fields, located but not decoded.
pub(super) struct PlaneFields<'a> {
    pub(super) name: String,
    pub(super) lines: Vec<Located<'a>>,
    pub(super) event_metadata: Vec<Located<'a>>,
    pub(super) stat_metadata: Vec<Located<'a>>,
    pub(super) stats: Vec<Located<'a>>,
}

pub(super) fn plane_fields(bytes: &[u8], off: usize) -> Result<PlaneFields<'_>> {
    let mut p = PlaneFields { name: String::new(), lines: Vec::new(), event_metadata: Vec::new(), stat_metadata: Vec::new(), stats: Vec::new() };
    let mut pf = Fields::with_base(bytes, off);
    while let Some((field, value, voff)) = pf.next_field()? {
        match field {
            2 => p.name = String::from_utf8_lossy(value.as_bytes()).into_owned(),
            3 => p.lines.push((value.as_bytes(), voff)),
            4 => p.event_metadata.push((value.as_bytes(), voff)),
            5 => p.stat_metadata.push((value.as_bytes(), voff)),
            6 => p.stats.push((value.as_bytes(), voff)),
            _ => {}
        }
    }
    Ok(p)
}

/// The id and name of a `stat_metadata` map entry.
pub(super) fn stat_metadata_name(entry: &[u8], off: usize) -> Result<(i64, &[u8])> {
    let (id, msg) = map_entry(entry, off)?;
    let mut name: &[u8] = b"";
    let mut mf = Fields::with_base(msg.0, msg.1);
    while let Some((field, value, _)) = mf.next_field()? {
        if field == 2 {
            name = value.as_bytes();
        }
    }
    Ok((id, name))
}

pub(super) fn scan_plane<'a>(bytes: &'a [u8], off: usize, start_epoch: &mut Option<i64>) -> Result<PlaneRef<'a>> {
    let PlaneFields { name, lines, stat_metadata, stats: plane_stats, .. } = plane_fields(bytes, off)?;
    let mut stat_names: HashMap<i64, &[u8]> = HashMap::new();
    for (entry, eoff) in stat_metadata {
        let (id, name) = stat_metadata_name(entry, eoff)?;
        stat_names.insert(id, name);
    }
    for (stat, soff) in plane_stats {
        let (id, value) = stat_id_and_value(stat, soff, |_| NO_STR)?;
        if stat_names.get(&id) == Some(&&b"profile_start_time"[..]) {
            *start_epoch = value_i64(value).or(*start_epoch);
        }
    }
    let kind = plane_kind(&name);
    let mut has_device_ops = false;
    if kind == PlaneKind::Device {
        for (line, loff) in lines {
            if has_device_ops {
                break;
            }
            let mut has_events = false;
            let header = read_line(line, loff, |_| has_events = true)?;
            has_device_ops |= has_events && crate::model::names::is_device_op_line(&String::from_utf8_lossy(header.display()));
        }
    }
    Ok(PlaneRef { bytes, off, name, kind, has_device_ops })
}

/// The header fields of an XLine (everything but its events).
#[derive(Default)]
pub(super) struct LineHeader<'a> {
    pub(super) id: i64,
    pub(super) name: &'a [u8],
    pub(super) display_name: &'a [u8],
    pub(super) timestamp_ns: i64,
}

impl<'a> LineHeader<'a> {
    /// The name a viewer shows: the display name when there is one.
    pub(super) fn display(&self) -> &'a [u8] {
        if self.display_name.is_empty() {
            self.name
        } else {
            self.display_name
        }
    }
}

/// Reads an XLine in one walk: its header, and where each event's field starts in `bytes`,
/// handed to `on_event`.
pub(super) fn read_line<'a>(bytes: &'a [u8], off: usize, mut on_event: impl FnMut(usize)) -> Result<LineHeader<'a>> {
    let mut h = LineHeader::default();
    let mut lf = Fields::with_base(bytes, off);
    loop {
        let field_start = lf.offset() - off;
        // Events are nearly all of a line's fields: passed over without the general reader.
        if lf.next_bytes_keyed(0x22).is_some() {
            on_event(field_start);
            continue;
        }
        let Some((field, value, _)) = lf.next_field()? else { break };
        match field {
            1 => h.id = value.as_i64(),
            2 => h.name = value.as_bytes(),
            11 => h.display_name = value.as_bytes(),
            3 => h.timestamp_ns = value.as_i64(),
            4 => on_event(field_start),
            _ => {}
        }
    }
    Ok(h)
}

/// A line to scan: its plane's index, its plane context's, its bytes and their file offset.
pub(super) type PendingLine<'a> = (u32, usize, &'a [u8], usize);

/// A scanned line: its header and its events' count and marks.
pub(super) type ScannedLine<'a> = Result<(LineHeader<'a>, LineEvents)>;

/// Each line's header and its events (count and marks), scanned on all workers (lines dealt largest
/// first to the least loaded); results in the order of `lines`.
pub(super) fn scan_lines<'a>(lines: &[PendingLine<'a>], read: &Release<'_>) -> Vec<ScannedLine<'a>> {
    let scan = |bytes: &'a [u8], off: usize| {
        let mut events = LineEvents::default();
        let mut released = 0;
        let header = read_line(bytes, off, |field_start| {
            if events.count % EVENTS_PER_MARK == 0 {
                events.marks.push(field_start);
                release_read(bytes, &mut released, field_start, false, read);
            }
            events.count += 1;
        });
        release_read(bytes, &mut released, bytes.len(), true, read);
        header.map(|header| (header, events))
    };
    let workers = crate::work_queue::workers().min(lines.len());
    let total: usize = lines.iter().map(|l| l.2.len()).sum();
    if workers <= 1 || total < (1 << 20) {
        return lines.iter().map(|&(_, _, bytes, off)| scan(bytes, off)).collect();
    }
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lines[i].2.len()));
    let mut shares: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); workers];
    for i in order {
        let least = shares.iter_mut().min_by_key(|(load, _)| *load).expect("a worker");
        least.0 += lines[i].2.len();
        least.1.push(i);
    }
    let mut out: Vec<Option<ScannedLine<'a>>> = (0..lines.len()).map(|_| None).collect();
    let scanned = crate::work_queue::map_in_order(shares, |(_, indices)| indices.into_iter().map(|i| (i, scan(lines[i].2, lines[i].3))).collect::<Vec<_>>());
    for (i, r) in scanned.into_iter().flatten() {
        out[i] = Some(r);
    }
    out.into_iter().map(|r| r.expect("every line scanned")).collect()
}
