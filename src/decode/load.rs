//! Loading: the run's files mapped or read, hashed on another core, and decoded part by part
//! into a [`PartSink`] (an ingest's writers, an analysis's tables, or one whole [`Capture`]).

use super::{
    file_name, hlo, input_err, nsys, part_bytes, trace_json, wire, xplane, ArgsKept, Capture, Digest, File, InputError, LoadError, Path, PlaneKind, Read,
    Resolved, Sha256, SourceFile, SourceKind, SMALL_PART_EVENTS,
};

/// What loading produced besides the capture.
pub struct Loaded {
    pub capture: Capture,
    pub trace_sha256: String,
    pub files: Vec<SourceFile>,
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Memory-maps a file (empty files are an error: there is nothing to map or decode).
pub(super) fn map_file(path: &Path) -> Result<memmap2::Mmap, InputError> {
    let file = File::open(path).map_err(|e| input_err(path, format!("cannot open: {e}")))?;
    let len = file.metadata().map_err(|e| input_err(path, format!("cannot stat: {e}")))?.len();
    if len == 0 {
        return Err(input_err(path, "empty file"));
    }
    // SAFETY: the map is read-only and profq never writes input files; a file truncated
    // underneath us by another process is outside what any reader can defend against.
    unsafe { memmap2::Mmap::map(&file) }.map_err(|e| input_err(path, format!("cannot map: {e}")))
}

/// Drops the mapped pages of `bytes` (a slice of `map`) from this process's memory: they
/// were read and are not needed again, so a file larger than memory keeps RSS bounded.
pub(super) fn release(map: &memmap2::Mmap, bytes: &[u8]) {
    #[cfg(unix)]
    {
        let off = bytes.as_ptr() as usize - map.as_ptr() as usize;
        // SAFETY: the map is a private read-only file mapping; dropped pages are read back
        // from the file if touched again, so no reference into the map is invalidated.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, off, bytes.len()) };
    }
    #[cfg(not(unix))]
    let _ = (map, bytes);
}

/// sha256 of a mapped file, read in place a window at a time, each window's pages dropped
/// once hashed (hashing must not make the file resident; the decoder reads any it still
/// needs back from the file). In place, it saves the copy into a buffer that `read()`
/// makes: ~20 % of the hash's CPU time.
pub(super) fn sha256_map(map: &memmap2::Mmap) -> String {
    let mut h = Sha256::new();
    for window in map.chunks(4 << 20) {
        h.update(window);
        release(map, window);
    }
    hex(&h.finalize())
}

/// sha256 of a file, read in blocks (not mapped: hashing must not make the file resident).
pub(super) fn sha256_file(path: &Path) -> Result<String, InputError> {
    let mut file = File::open(path).map_err(|e| input_err(path, format!("cannot open: {e}")))?;
    let mut h = Sha256::new();
    let mut block = vec![0u8; 4 << 20];
    loop {
        match file.read(&mut block) {
            Ok(0) => break,
            Ok(n) => h.update(&block[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(input_err(path, format!("cannot read: {e}"))),
        }
    }
    Ok(hex(&h.finalize()))
}

/// Receives a run part by part: each call finds one part's events in `capture.chunks`;
/// strings, planes, lines and HLO accumulate across parts. Parts arrive in order on a
/// thread of their own, while the next part decodes.
pub trait PartSink: Send {
    type Error: Send;
    /// The run's trace_sha256: before the first part when [`PartSink::identifies_first`]
    /// (a sink may refuse the run here), else after the last.
    fn identified(&mut self, _trace_sha256: &str) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Whether the sink must learn the digest before any part (to refuse a run it already
    /// holds). Other sinks take parts while the file is still being hashed (~20 ms for 43 MB)
    /// instead of holding up the decoder at its first hand-over.
    fn identifies_first(&self) -> bool {
        false
    }
    fn part(&mut self, capture: &mut Capture) -> Result<(), Self::Error>;
    /// How far the load has got, told just before each part is received.
    fn progress(&mut self, _progress: &LoadProgress) {}
    /// Which args the sink reads (see [`Capture::args_kept`]); None: all of them.
    fn args_kept(&self) -> Option<ArgsKept> {
        None
    }
    /// Run on each part on the decoding thread before it is handed over: the only place a
    /// sink may add strings to the capture's pool (the decoder alone writes it, so that
    /// ids come out the same however the threads run).
    fn prepare_part(&self) -> Option<fn(&mut Capture)> {
        None
    }
    /// Whether the next part may decode while this sink takes the last one. A sink that
    /// keeps every core busy itself (ingest's Parquet writers) gains nothing from it, and
    /// would hold two parts' events in memory.
    fn overlaps_decode(&self) -> bool {
        false
    }
    /// Forget every part received: loading starts over (the XPlane failed, the trace JSON follows).
    fn restart(&mut self) -> Result<(), Self::Error>;
}

/// How far a load has got: files and their bytes decoded whole, and events handed over.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadProgress {
    pub files_done: usize,
    pub files: usize,
    pub bytes_done: u64,
    pub bytes: u64,
    pub events: u64,
}

/// Keeps every part's chunks: the whole capture in memory.
pub(super) struct WholeCapture(Vec<crate::model::EventChunk>);

impl PartSink for WholeCapture {
    type Error = std::convert::Infallible;
    fn part(&mut self, capture: &mut Capture) -> Result<(), Self::Error> {
        self.0.append(&mut capture.chunks);
        Ok(())
    }
    fn restart(&mut self) -> Result<(), Self::Error> {
        self.0.clear();
        Ok(())
    }
}

/// Decodes every file of a resolved input into one capture (one run), all in memory.
pub fn load(resolved: &Resolved) -> Result<Loaded, InputError> {
    let mut whole = WholeCapture(Vec::new());
    match load_parts(resolved, &mut whole) {
        Ok(mut loaded) => {
            loaded.capture.chunks = whole.0;
            Ok(loaded)
        }
        Err(LoadError::Input(e)) => Err(e),
        Err(LoadError::Sink(never)) => match never {},
    }
}

/// Decodes a resolved input into one run, handing it to `sink` a part at a time (see
/// [`PartSink`]); the returned capture holds everything but the events.
pub fn load_parts<S: PartSink>(resolved: &Resolved, sink: &mut S) -> Result<Loaded, LoadError<S::Error>> {
    match load_files(&resolved.files, resolved, sink) {
        Ok(l) => Ok(l),
        Err(LoadError::Input(e)) if !resolved.fallback.is_empty() => {
            sink.restart().map_err(LoadError::Sink)?;
            let mut l = load_files(&resolved.fallback, resolved, sink).map_err(|e2| match e2 {
                LoadError::Input(e2) => LoadError::Input(input_err(&e.path, format!("{}; fallback trace JSON failed too: {e2}", e.what))),
                sink_error => sink_error,
            })?;
            l.capture.meta.quality_warnings.insert(0, format!("XPlane not used ({e}); read the trace JSON instead"));
            Ok(l)
        }
        Err(e) => Err(e),
    }
}

pub(super) fn load_files<S: PartSink>(files: &[SourceFile], resolved: &Resolved, sink: &mut S) -> Result<Loaded, LoadError<S::Error>> {
    let mut capture = Capture { args_kept: sink.args_kept(), ..Capture::default() };
    capture.meta.quality_warnings.extend(resolved.notes.iter().cloned());
    capture.meta.source_format = match files.first().map(|f| f.kind) {
        Some(SourceKind::XPlane) => "xplane",
        Some(SourceKind::Nsys) => "nsys",
        _ => "trace_json",
    };
    if capture.meta.source_format == "xplane" {
        capture.meta.framework = Some("jax");
    }
    // HLO side files first: ops need their instructions when their part is derived.
    for h in &resolved.hlo_files {
        let bytes = std::fs::read(h).map_err(|e| input_err(h, format!("cannot read: {e}")))?;
        let name = file_name(h);
        let module = name.trim_end_matches(".hlo_proto.pb");
        let program_id = module.rfind('(').and_then(|k| module[k + 1..].trim_end_matches(')').parse::<u64>().ok()).map(|v| v as i64);
        if let Err(e) = hlo::index_hlo_proto(&bytes, program_id, &mut capture.strings, std::sync::Arc::make_mut(&mut capture.hlo)) {
            capture.meta.quality_warnings.push(format!("{name}: {e}"));
        }
    }
    // Every XPlane's layout before any events: all hosts' starts fix the run's start, by
    // which each host's events are shifted as they are decoded.
    let mut maps = Vec::new();
    for f in files.iter().filter(|f| f.kind == SourceKind::XPlane) {
        maps.push(map_xplane(f)?);
    }
    let mut layouts = Vec::new();
    for (f, map) in files.iter().filter(|f| f.kind == SourceKind::XPlane).zip(&maps) {
        let layout = xplane::scan(map, &mut |plane| release(map, plane)).map_err(|e| input_err(&f.path, format!("corrupt or truncated XPlane: {e}")))?;
        if layout.planes.is_empty() {
            return Err(input_err(&f.path, "not an XPlane: no planes decoded").into());
        }
        layouts.push(layout);
    }
    let run_start = layouts.iter().filter_map(|l| l.start_epoch).min();
    capture.meta.start_epoch_ns = run_start;

    let mut xplanes = maps.iter().zip(&layouts);
    let prepare_part = sink.prepare_part();
    let file_bytes: Vec<u64> = files.iter().map(|f| std::fs::metadata(&f.path).map_or(0, |m| m.len())).collect();
    let progress = std::cell::Cell::new(LoadProgress { files: files.len(), bytes: file_bytes.iter().sum(), ..LoadProgress::default() });
    let trace_sha256 = std::thread::scope(|scope| {
        // The files are hashed on another core while the parts decode; a sink that
        // identifies first learns the digest before it receives the first part.
        let identifies_first = sink.identifies_first();
        let maps_hashed = &maps;
        let hasher = scope.spawn(move || {
            // A sink that learns the digest after the last part needs it only then: the hash
            // takes the cycles the parts leave idle rather than holding them up.
            if !identifies_first {
                crate::work_queue::run_only_when_idle();
            }
            run_digest(files, maps_hashed)
        });
        // Parts go to the sink's thread. When it overlaps the decode, a part is derived there
        // while the next one decodes, so at most two large parts' events are in memory at
        // once; otherwise the decoder waits for each large part's receipt. A small part (the
        // metadata planes') holds nothing up: the channel keeps it while the sink learns the
        // digest, and the next part decodes meanwhile.
        let overlap = sink.overlaps_decode();
        let (parts, received) = std::sync::mpsc::sync_channel::<(Capture, LoadProgress)>(1);
        let (receipt, receipts) = std::sync::mpsc::channel::<()>();
        let receiver = scope.spawn(move || -> Result<String, LoadError<S::Error>> {
            let mut hasher = Some(hasher);
            let mut identify = |sink: &mut S| -> Result<String, LoadError<S::Error>> {
                let digest = hasher.take().expect("identified once").join().expect("hash thread")?;
                sink.identified(&digest).map_err(LoadError::Sink)?;
                Ok(digest)
            };
            let first = if identifies_first { Some(identify(sink)?) } else { None };
            for (mut part, progress) in received {
                sink.progress(&progress);
                sink.part(&mut part).map_err(LoadError::Sink)?;
                let _ = receipt.send(());
            }
            match first {
                Some(digest) => Ok(digest),
                None => identify(sink),
            }
        });
        // Parts handed over whose receipt has not come back.
        let mut in_sink = 0usize;
        let progress = &progress;
        let mut hand_over = move |capture: &mut Capture| -> Result<(), Stop> {
            if let Some(prepare) = prepare_part {
                prepare(capture);
            }
            let small = capture.num_events() < SMALL_PART_EVENTS;
            let mut told = progress.get();
            told.events += capture.num_events() as u64;
            progress.set(told);
            parts.send((capture.take_part(), told)).map_err(|_| Stop::SinkStopped)?;
            in_sink += 1;
            let may_stay = match (small, overlap) {
                (true, _) => in_sink,
                (false, true) => 1,
                (false, false) => 0,
            };
            while in_sink > may_stay {
                receipts.recv().map_err(|_| Stop::SinkStopped)?;
                in_sink -= 1;
            }
            Ok(())
        };
        let decoded = (|| -> Result<(), Stop> {
            for (f, bytes) in files.iter().zip(&file_bytes) {
                match f.kind {
                    SourceKind::XPlane => {
                        let (map, layout) = xplanes.next().expect("one layout per XPlane");
                        let shift = match (layout.start_epoch, run_start) {
                            (Some(s), Some(r)) => s - r,
                            _ => 0,
                        };
                        stream_xplane(f, map, layout, shift, &mut capture, &mut hand_over)?;
                    }
                    SourceKind::TraceJson => {
                        load_json(f, &mut capture)?;
                        hand_over(&mut capture)?;
                    }
                    SourceKind::Nsys => nsys::decode_nsys(&f.path, &f.host, &mut capture, &mut hand_over, |e| Stop::Input(input_err(&f.path, e)))?,
                }
                let mut done = progress.get();
                done.files_done += 1;
                done.bytes_done += bytes;
                progress.set(done);
            }
            Ok(())
        })();
        // The sink's thread ends with the last part; its error comes first, as it is about an
        // earlier part than the decoder's.
        drop(hand_over);
        match (receiver.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), decoded) {
            (Err(e), _) => Err(e),
            (Ok(_), Err(Stop::Input(e))) => Err(LoadError::Input(e)),
            (Ok(_), Err(Stop::SinkStopped)) => unreachable!("the sink stops early only with an error"),
            (Ok(digest), Ok(())) => Ok(digest),
        }
    })?;
    Ok(Loaded { capture, trace_sha256, files: files.to_vec() })
}

/// Why the decoding thread stopped before the end.
pub(super) enum Stop {
    Input(InputError),
    /// The sink's thread stopped receiving parts (it failed: its error is reported).
    SinkStopped,
}

impl From<InputError> for Stop {
    fn from(e: InputError) -> Self {
        Stop::Input(e)
    }
}

/// The run's trace_sha256: the file's sha256, or for several files the sha256 of their
/// sorted `name:sha256` lines.
pub(super) fn run_digest(files: &[SourceFile], xplane_maps: &[memmap2::Mmap]) -> Result<String, InputError> {
    let mut maps = xplane_maps.iter();
    let mut digests = Vec::new();
    for f in files {
        let digest = match f.kind {
            SourceKind::XPlane => sha256_map(maps.next().expect("one map per XPlane")),
            SourceKind::TraceJson | SourceKind::Nsys => sha256_file(&f.path)?,
        };
        digests.push((file_name(&f.path), digest));
    }
    if digests.len() == 1 {
        return Ok(digests.remove(0).1);
    }
    digests.sort();
    let mut h = Sha256::new();
    for (n, s) in digests {
        h.update(format!("{n}:{s}\n").as_bytes());
    }
    Ok(hex(&h.finalize()))
}

pub(super) fn map_xplane(f: &SourceFile) -> Result<memmap2::Mmap, InputError> {
    let map = map_file(&f.path)?;
    if map.starts_with(&[0x1f, 0x8b]) || matches!(map.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{')) {
        return Err(input_err(&f.path, "not an XPlane protobuf (looks like JSON or gzip)"));
    }
    Ok(map)
}

/// Decodes one host's XPlane a part at a time: metadata planes first (HLO, profile start),
/// then host planes (step annotations), then device planes, each group whole planes of at
/// most [`part_bytes`] (one plane when larger). Events are shifted by `shift_ns` onto the
/// run's clock; each part's pages of the file are dropped once decoded, and `on_part` takes
/// the part's events out of `capture`.
pub(super) fn stream_xplane(
    f: &SourceFile,
    map: &memmap2::Mmap,
    layout: &xplane::Layout,
    shift_ns: i64,
    capture: &mut Capture,
    on_part: &mut dyn FnMut(&mut Capture) -> Result<(), Stop>,
) -> Result<(), Stop> {
    let host = xplane::register_host(layout, &f.host, capture);
    let rank = |k: PlaneKind| match k {
        PlaneKind::Other => 0,
        PlaneKind::Host => 1,
        PlaneKind::Device => 2,
    };
    let mut ordered: Vec<&xplane::PlaneRef> = layout.planes.iter().collect();
    ordered.sort_by_key(|p| rank(p.kind));
    let limit = part_bytes();
    let mut groups: Vec<Vec<&xplane::PlaneRef>> = vec![Vec::new()];
    let mut acc = 0;
    for plane in ordered {
        if acc > 0 && acc + plane.bytes.len() > limit {
            groups.push(Vec::new());
            acc = 0;
        }
        acc += plane.bytes.len();
        groups.last_mut().expect("a group").push(plane);
    }
    let wire_err = |e: wire::WireError| Stop::Input(input_err(&f.path, format!("corrupt or truncated XPlane: {e}")));
    let mut shifted = |capture: &mut Capture| -> Result<(), Stop> {
        if shift_ns != 0 {
            for c in &mut capture.chunks {
                for s in c.start_ns.iter_mut() {
                    *s = s.saturating_add(shift_ns);
                }
            }
        }
        on_part(capture)
    };
    for group in groups {
        xplane::decode_group(&group, host, layout.start_epoch, capture, &|bytes| release(map, bytes), &wire_err, &mut shifted)?;
    }
    Ok(())
}

/// Decompresses gzip `bytes` in 1 MiB blocks into `tx`; stops early when the reader is gone.
pub(super) fn gunzip_into(bytes: &[u8], tx: std::sync::mpsc::SyncSender<std::io::Result<Vec<u8>>>) {
    let mut gz = flate2::read::MultiGzDecoder::new(bytes);
    loop {
        let mut block = vec![0u8; 1 << 20];
        let mut filled = 0;
        while filled < block.len() {
            match gz.read(&mut block[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        block.truncate(filled);
        if filled == 0 || tx.send(Ok(block)).is_err() {
            return;
        }
    }
}

/// The reading end of [`gunzip_into`].
pub(super) struct ChannelReader {
    pub(super) rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.rx.recv() {
                Ok(Ok(block)) => {
                    self.buf = block;
                    self.pos = 0;
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

pub(super) fn load_json(f: &SourceFile, capture: &mut Capture) -> Result<(), InputError> {
    let mut file = File::open(&f.path).map_err(|e| input_err(&f.path, format!("cannot open: {e}")))?;
    let mut magic = [0u8; 2];
    let gzip = file.read_exact(&mut magic).is_ok() && magic == [0x1f, 0x8b];
    let decoded = if gzip {
        let map = map_file(&f.path)?;
        let map = &map;
        std::thread::scope(|s| {
            // gunzip on its own thread, a few MiB ahead of the parser.
            let open = || {
                let (tx, rx) = std::sync::mpsc::sync_channel(4);
                s.spawn(move || gunzip_into(map, tx));
                ChannelReader { rx, buf: Vec::new(), pos: 0 }
            };
            trace_json::decode_trace_json(open, &f.host, capture)
        })
    } else {
        // Read, not mapped: the text is copied out as it is parsed, and reading copies it
        // once without making the file resident.
        let open = || {
            let mut file = &file;
            let _ = std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0));
            file
        };
        trace_json::decode_trace_json(open, &f.host, capture)
    };
    decoded.map(|_| ()).map_err(|e| input_err(&f.path, e))
}
