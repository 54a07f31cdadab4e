//! The `traceEvents` array read in pieces on every core, and the pieces joined back into one.
//!
//! The text is read once, in blocks, and cut into pieces of about [`PIECE_BYTES`] where one
//! event ends and the next begins (`}`, `,`, `{` with only whitespace between); each piece,
//! wrapped as `[…]`, is parsed on a worker while the next is cut. A cut found this way may
//! fall inside a string or a nested object; no parse is trusted blindly:
//! - the first piece starts at the array's own `[`;
//! - a piece that starts at a true event boundary parses as `[…]` only if its cut is one too
//!   (a cut inside a string leaves the string open, a cut inside a nested value leaves a
//!   bracket open), so by induction every piece starts at a true boundary when they all parse;
//! - the top-level text, with the array replaced by [`PIECES_MARKER`], must parse with the
//!   marker as its `traceEvents`.
//!
//! When any check fails, [`read_in_pieces`] gives up and the caller reads the text whole,
//! which also gives malformed JSON its exact error. Cuts depend on the text and
//! [`PIECE_BYTES`] only, never on the number of cores, so the result is the same everywhere.

use super::events::{close_b, line_of, read_events, read_top, Id, OpenB, Piece, Top, PIECES_MARKER};
use crate::model::{EventChunk, StringPool, NO_STR};
use rustc_hash::FxHashMap as HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Bytes of the events array a piece holds at least (it runs on to the next event boundary):
/// large enough that joining the pieces' string pools costs little, small enough that every
/// core gets pieces and that the pieces in flight stay a few MiB each.
pub(super) const PIECE_BYTES: usize = 4 << 20;

/// Bytes asked of the reader at a time.
const READ_BYTES: usize = 1 << 20;

/// The text read so far and not yet handed out.
struct Text<R> {
    reader: R,
    buf: Vec<u8>,
    eof: bool,
    failed: bool,
}

impl<R: Read> Text<R> {
    /// Reads more of the text; false at its end (a read error ends it too, and is reported by
    /// the whole read that follows).
    fn more(&mut self) -> bool {
        if self.eof {
            return false;
        }
        // Into the buffer's spare room, which `read_to_end` does not zero first.
        let n = match self.reader.by_ref().take(READ_BYTES as u64).read_to_end(&mut self.buf) {
            Ok(n) => n,
            Err(_) => {
                self.failed = true;
                0
            }
        };
        self.eof = n == 0;
        n > 0
    }
}

fn skip_ws(buf: &[u8], mut i: usize) -> usize {
    while i < buf.len() && matches!(buf[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Where the events array starts.
enum Start {
    /// The text is a bare array; its `[` is here.
    Bare(usize),
    /// The text is an object whose `traceEvents` array has its `[` here.
    InObject(usize),
    /// Not found in the text read so far; search again from here once more is read.
    More(usize),
    /// Not a form the pieces can read.
    No,
}

fn find_start(buf: &[u8], from: usize) -> Start {
    const KEY: &[u8] = b"\"traceEvents\"";
    let first = skip_ws(buf, if buf.starts_with(b"\xef\xbb\xbf") { 3 } else { 0 });
    match buf.get(first) {
        None => return Start::More(0),
        Some(b'[') => return Start::Bare(first),
        Some(b'{') => {}
        Some(_) => return Start::No,
    }
    let mut at = from.max(first);
    while let Some(m) = memchr::memmem::find(&buf[at..], KEY) {
        let key = at + m;
        let colon = skip_ws(buf, key + KEY.len());
        let open = skip_ws(buf, colon + 1);
        if open >= buf.len() {
            return Start::More(key);
        }
        if buf[colon] == b':' && buf[open] == b'[' {
            return Start::InObject(open);
        }
        at = key + 1;
    }
    Start::More(buf.len().saturating_sub(KEY.len()))
}

/// Where one event ends and the next begins, at or after `from`.
enum Cut {
    /// The one ends before `.0` (after its `}`); the next starts at `.1` (its `{`).
    At(usize, usize),
    /// None in the text read so far; search again from here once more is read.
    More(usize),
}

fn find_cut(buf: &[u8], from: usize) -> Cut {
    let mut at = from;
    while let Some(m) = memchr::memchr(b'}', &buf[at..]) {
        let close = at + m;
        let comma = skip_ws(buf, close + 1);
        let open = skip_ws(buf, comma + 1);
        if open >= buf.len() {
            return Cut::More(close);
        }
        if buf[comma] == b',' && buf[open] == b'{' {
            return Cut::At(close + 1, open);
        }
        at = close + 1;
    }
    Cut::More(buf.len())
}

/// A piece's events, or None when its text is not a JSON array of events. The text is checked
/// to be UTF-8 once, so that its strings are not checked one by one.
fn parse_piece(text: &[u8]) -> Option<Piece> {
    let text = std::str::from_utf8(text).ok()?;
    let mut piece = Piece::new();
    let mut de = serde_json::Deserializer::from_str(text);
    read_events(&mut de, &mut piece).and_then(|_| de.end()).ok()?;
    Some(piece)
}

/// Reads a trace JSON's top level and its events array in pieces of at least `piece_bytes`
/// on every core. None when the text is not one the pieces can prove they read right (see
/// the module doc): read it whole instead.
pub(super) fn read_in_pieces<R: Read>(reader: R, piece_bytes: usize) -> Option<(Top, Vec<Piece>)> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(workers);
    let rx = Mutex::new(rx);
    let failed = AtomicBool::new(false);
    let parsed: Mutex<Vec<(usize, Piece)>> = Mutex::new(Vec::new());
    let (top, sent) = std::thread::scope(|s| {
        for _ in 0..workers {
            let (rx, failed, parsed) = (&rx, &failed, &parsed);
            s.spawn(move || loop {
                let Ok((i, text)) = rx.lock().expect("piece queue").recv() else { return };
                if failed.load(Ordering::Relaxed) {
                    continue;
                }
                match parse_piece(&text) {
                    Some(piece) => parsed.lock().expect("pieces").push((i, piece)),
                    None => failed.store(true, Ordering::Relaxed),
                }
            });
        }
        let mut sent = 0usize;
        let mut send = |text: Vec<u8>| -> bool {
            let ok = !failed.load(Ordering::Relaxed) && tx.send((sent, text)).is_ok();
            sent += 1;
            ok
        };
        let top = cut(Text { reader, buf: Vec::new(), eof: false, failed: false }, piece_bytes, &mut send);
        drop(tx);
        (top, sent)
    });
    let mut parsed = parsed.into_inner().expect("pieces");
    if failed.into_inner() || parsed.len() != sent {
        return None;
    }
    parsed.sort_unstable_by_key(|(i, _)| *i);
    Some((top?, parsed.into_iter().map(|(_, p)| p).collect()))
}

/// Cuts the text into pieces of at least `piece_bytes` handed to `send` (false: stop), and
/// reads the top level.
fn cut<R: Read>(mut text: Text<R>, piece_bytes: usize, send: &mut dyn FnMut(Vec<u8>) -> bool) -> Option<Top> {
    // The top-level text before the array's `[` (none for a bare array).
    let mut from = 0;
    let (open, head) = loop {
        match find_start(&text.buf, from) {
            Start::Bare(open) => break (open, None),
            Start::InObject(open) => break (open, Some(text.buf[..open].to_vec())),
            Start::More(at) if text.more() => from = at,
            Start::More(_) | Start::No => return None,
        }
    };
    // Each piece is its own buffer: `[` first (the array's own for the first piece, one put
    // before the cut event for the others) and `]` put after its last event.
    text.buf.drain(..open);
    let mut scan = piece_bytes;
    loop {
        if text.buf.len() > scan {
            match find_cut(&text.buf, scan) {
                Cut::At(end, next) => {
                    let mut rest = Vec::with_capacity(piece_bytes.max(text.buf.len() - next) + 2 * READ_BYTES);
                    rest.push(b'[');
                    rest.extend_from_slice(&text.buf[next..]);
                    let mut piece = std::mem::replace(&mut text.buf, rest);
                    piece.truncate(end);
                    piece.push(b']');
                    if !send(piece) {
                        return None;
                    }
                    scan = piece_bytes;
                    continue;
                }
                Cut::More(at) => scan = at,
            }
        }
        if !text.more() {
            break;
        }
    }
    if text.failed {
        return None;
    }
    // The last piece runs to the array's `]`, where the top level's tail begins.
    let mut last = std::mem::take(&mut text.buf);
    drop(text);
    let mut values = serde_json::Deserializer::from_slice(&last).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    let end = values.byte_offset();
    let tail = last.split_off(end);
    if !send(last) {
        return None;
    }
    let marker = serde_json::to_string(PIECES_MARKER).expect("a string");
    let top_text = match head {
        Some(head) => [&head[..], marker.as_bytes(), &tail].concat(),
        None => [b"{\"traceEvents\":", marker.as_bytes(), b"}", &tail].concat(),
    };
    let (mut top, mut stray) = (Top::default(), Piece::new());
    let mut de = serde_json::Deserializer::from_slice(&top_text);
    read_top(&mut de, &mut top, &mut stray).and_then(|_| de.end()).ok()?;
    (top.saw_marker && stray.total == 0).then_some(top)
}

/// The pieces as one: events in one chunk, ids into the capture's pool and one line list.
pub(super) struct Joined {
    pub chunk: EventChunk,
    pub line_list: Vec<(Id, Id)>,
    pub process_names: HashMap<Id, u32>,
    pub process_labels: HashMap<Id, u32>,
    pub thread_names: HashMap<(Id, Id), u32>,
    /// `B` events never closed, and `E` events that closed nothing.
    pub unclosed: usize,
    pub unmatched_e: i64,
    pub total: i64,
    pub dropped_flows: i64,
    pub bad_times: i64,
}

/// Joins the pieces in text order: their strings into `pool`, their lines into one list, later
/// names over earlier ones, and each piece's lone `E` events closing the `B`s left open
/// before it (innermost first, as the whole text read in one go would).
pub(super) fn join(pieces: Vec<Piece>, pool: &mut StringPool) -> Joined {
    let mut lines = HashMap::default();
    let mut joined = Joined {
        chunk: EventChunk::new(),
        line_list: Vec::new(),
        process_names: HashMap::default(),
        process_labels: HashMap::default(),
        thread_names: HashMap::default(),
        unclosed: 0,
        unmatched_e: 0,
        total: 0,
        dropped_flows: 0,
        bad_times: 0,
    };
    let mut open_b: HashMap<(Id, Id), Vec<OpenB>> = HashMap::default();
    let mut chunks = Vec::with_capacity(pieces.len());
    for piece in pieces {
        let Piece {
            pool: local,
            mut chunk,
            line_list,
            process_names,
            process_labels,
            thread_names,
            open_b: left_open,
            lone_e,
            total,
            dropped_flows,
            bad_times,
            ..
        } = piece;
        let remap = local.ids_in(pool);
        let string = |id: u32| if id == NO_STR { NO_STR } else { remap[id as usize] };
        let id = |id: Id| match id {
            Id::Str(s) => Id::Str(string(s)),
            n => n,
        };
        chunk.remap_strings(&remap);
        let line_remap: Vec<u32> = line_list.into_iter().map(|(p, t)| line_of(&mut lines, &mut joined.line_list, (id(p), id(t)))).collect();
        for l in chunk.line.iter_mut() {
            *l = line_remap[*l as usize];
        }
        joined.process_names.extend(process_names.into_iter().map(|(p, n)| (id(p), string(n))));
        joined.process_labels.extend(process_labels.into_iter().map(|(p, n)| (id(p), string(n))));
        joined.thread_names.extend(thread_names.into_iter().map(|((p, t), n)| ((id(p), id(t)), string(n))));
        for e in lone_e {
            let thread = (id(e.thread.0), id(e.thread.1));
            let Some(open) = open_b.get_mut(&thread).and_then(Vec::pop) else {
                joined.unmatched_e += 1;
                continue;
            };
            let line = line_of(&mut lines, &mut joined.line_list, thread);
            let keys: Vec<u32> = e.keys.iter().map(|&k| string(k)).collect();
            close_b(&mut chunk, pool, line, open, e.ts_ns, &keys, &e.values);
        }
        for ((p, t), stack) in left_open {
            let opens = stack.into_iter().map(|b| OpenB { name: string(b.name), cat: string(b.cat), keys: b.keys.iter().map(|&k| string(k)).collect(), ..b });
            open_b.entry((id(p), id(t))).or_default().extend(opens);
        }
        joined.total += total;
        joined.dropped_flows += dropped_flows;
        joined.bad_times += bad_times;
        chunks.push(chunk);
    }
    joined.unclosed = open_b.values().map(Vec::len).sum();
    joined.chunk = EventChunk::concat(chunks);
    joined
}
