//! The SQLite VFS over the file layer: the crate's only `unsafe` code (SQLite's C
//! interface through `rusqlite::ffi`).
//!
//! Each [`Registration`] registers one VFS under a name unique while it lives
//! (`deltaflash-<address of its state>`); its `pAppData` points at the instance's
//! state, which the registration owns and frees after unregistering. Connections must
//! be closed before the registration drops (`FlashSqlite` declares them first).
//!
//! Files: the main database, `-wal`, `-journal` and super-journals go to the file
//! layer on flash; temporary files (temp databases, statement journals, VACUUM's
//! transient database) stay in RAM, like a tmpfs `/tmp`; the WAL index (`-shm`) is RAM
//! shared by the instance's connections. `xSync` is the flush barrier
//! ([`FileStore::sync`]). Locks are kept among the instance's connections
//! ([`crate::locks`]). Simulated time passes with every I/O, a fixed CPU cost per
//! statement (`SQLITE_TRACE_STMT`), and `xSleep`; `xCurrentTime` is simulated time
//! after a fixed epoch and `xRandomness` a seeded ChaCha stream, so runs replay.
//!
//! NoLgn mode (the file layer's, see `files.rs`): `xFileControl` sees every PRAGMA;
//! it answers `journal_mode=<anything>` with `off` without changing it, and tells the
//! file layer whether `synchronous` is NORMAL (grouped commits). `xUnlock` below a
//! reserved lock drops the pages of a transaction SQLite did not sync (a rollback).
//!
//! Fault model: a flash error (a power cut included) becomes SQLite's `SQLITE_IOERR_*`
//! (or `SQLITE_FULL` when space runs out) and its text is kept for
//! [`Registration::last_error`]; SQLite then rolls back or stops, and the caller
//! reopens the device.

use crate::error::Error;
use crate::files::FileStore;
use crate::locks::{Level, LockTable};
use rand::RngCore;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rusqlite::ffi;
use rusqlite::{Connection, OpenFlags};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The main database's file name; SQLite derives `-wal`, `-journal` and `-shm` from it.
pub const DB_NAME: &str = "main.db";
/// Simulated time 0 is this wall-clock instant (2026-01-01T00:00Z), in Unix ms.
const EPOCH_UNIX_MS: i64 = 1_767_225_600_000;
/// Unix epoch in SQLite's Julian-day milliseconds.
const UNIX_EPOCH_JULIAN_MS: i64 = 210_866_760_000_000;
const MAX_PATHNAME: c_int = 512;

/// One WAL-index region: RAM that SQLite reads and writes through a raw pointer.
struct ShmRegion {
    ptr: *mut u8,
    len: usize,
}

impl ShmRegion {
    fn zeroed(len: usize) -> ShmRegion {
        let ptr = Box::into_raw(vec![0u8; len].into_boxed_slice()) as *mut u8;
        ShmRegion { ptr, len }
    }
}

impl Drop for ShmRegion {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from `Box::into_raw` of a boxed slice in
        // `zeroed`, and the region is dropped once (SQLite unmapped it: no connection
        // holds the pointer any more).
        drop(unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

// SAFETY: the region is plain heap memory owned by this value; SQLite coordinates its
// own access to it across connections with the shm locks.
unsafe impl Send for ShmRegion {}

/// The WAL index of one database and how many handles map it.
#[derive(Default)]
struct ShmFile {
    regions: Vec<ShmRegion>,
    users: u32,
}

/// Everything one instance owns, behind one mutex.
pub(crate) struct State {
    /// `None` only after the instance handed it back.
    pub store: Option<FileStore>,
    pub statement_cpu_ns: u64,
    pub statements: u64,
    /// The last flash error a VFS call turned into a SQLite error code.
    pub last_error: Option<String>,
    locks: LockTable,
    shm: HashMap<String, ShmFile>,
    rng: ChaCha8Rng,
    next_handle: u64,
}

pub(crate) struct Instance {
    state: Mutex<State>,
}

impl Instance {
    pub fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock left plain data behind; keep going.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A registered VFS and the state it serves.
pub(crate) struct Registration {
    vfs: Box<ffi::sqlite3_vfs>,
    name: String,
    /// Keeps `vfs.zName` alive.
    _c_name: CString,
    instance: Arc<Instance>,
}

impl Registration {
    pub fn new(store: FileStore, statement_cpu_ns: u64, seed: u64) -> Result<Registration, Error> {
        let state = State {
            store: Some(store),
            statement_cpu_ns,
            statements: 0,
            last_error: None,
            locks: LockTable::default(),
            shm: HashMap::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            next_handle: 1,
        };
        let instance = Arc::new(Instance { state: Mutex::new(state) });
        let name = format!("deltaflash-{:p}", Arc::as_ptr(&instance));
        let c_name = CString::new(name.clone()).map_err(|e| Error::CorruptTable(format!("VFS name: {e}")))?;
        let mut vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: std::mem::size_of::<FileHandle>() as c_int,
            mxPathname: MAX_PATHNAME,
            pNext: ptr::null_mut(),
            zName: c_name.as_ptr(),
            pAppData: Arc::as_ptr(&instance) as *mut c_void,
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: Some(x_dl_open),
            xDlError: Some(x_dl_error),
            xDlSym: Some(x_dl_sym),
            xDlClose: Some(x_dl_close),
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        });
        // SAFETY: `vfs` is a complete, heap-pinned sqlite3_vfs whose name and app data
        // live as long as this registration, which unregisters it before freeing them.
        let rc = unsafe { ffi::sqlite3_vfs_register(&mut *vfs, 0) };
        if rc != ffi::SQLITE_OK {
            return Err(Error::Sqlite(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None)));
        }
        Ok(Registration { vfs, name, _c_name: c_name, instance })
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.instance.state()
    }

    /// A new connection to the instance's database, charging CPU time per statement.
    pub fn open_connection(&self) -> Result<Connection, Error> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(DB_NAME, flags, &self.name)?;
        // SAFETY: the handle is the live connection's; the callback context is the
        // instance, which outlives every connection (they close before the
        // registration drops).
        let rc = unsafe {
            ffi::sqlite3_trace_v2(
                conn.handle(),
                ffi::SQLITE_TRACE_STMT as c_uint,
                Some(on_statement),
                Arc::as_ptr(&self.instance) as *mut c_void,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(Error::Sqlite(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None)));
        }
        Ok(conn)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: registered in `new`; no connection uses it any more.
        unsafe { ffi::sqlite3_vfs_unregister(&mut *self.vfs) };
    }
}

/// Whether `sql` ends with a complete statement (SQLite's own `sqlite3_complete`).
pub fn is_complete(sql: &str) -> bool {
    let Ok(text) = CString::new(sql) else {
        return false;
    };
    // SAFETY: a NUL-terminated string that lives across the call.
    unsafe { ffi::sqlite3_complete(text.as_ptr()) != 0 }
}

/// What SQLite allocates for an open file (`szOsFile` bytes): the base struct first.
#[repr(C)]
struct FileHandle {
    base: ffi::sqlite3_file,
    open: *mut OpenFile,
}

enum Contents {
    /// A file of the file layer, by name.
    Flash(String),
    /// A temporary file in RAM, private to its handle.
    Memory(Vec<u8>),
}

struct OpenFile {
    instance: *const Instance,
    id: u64,
    name: String,
    contents: Contents,
    lock: Level,
    delete_on_close: bool,
    /// Shm slots held (bit masks) once the WAL index is mapped.
    shm: Option<(u8, u8)>,
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

/// The instance a VFS serves.
///
/// # Safety
/// `vfs` must be one registered by [`Registration::new`], still registered.
unsafe fn instance_of<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a Instance {
    // SAFETY: per the contract, pAppData points at the registration's live instance.
    unsafe { &*((*vfs).pAppData as *const Instance) }
}

/// The open file behind a handle and its instance.
///
/// # Safety
/// `file` must be a handle opened by `x_open` and not yet closed.
unsafe fn open_file<'a>(file: *mut ffi::sqlite3_file) -> (&'a mut OpenFile, &'a Instance) {
    // SAFETY: `x_open` wrote a FileHandle at `file` whose `open` is a leaked Box,
    // freed only by `x_close`; SQLite calls a file's methods one at a time; the
    // instance outlives its files.
    unsafe {
        let open = &mut *(*(file as *mut FileHandle)).open;
        let instance = &*open.instance;
        (open, instance)
    }
}

/// A C string argument as text (`None` for a null pointer).
///
/// # Safety
/// `s` must be null or a NUL-terminated string.
unsafe fn text<'a>(s: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    // SAFETY: per the contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy())
}

/// A SQLite code for a file-layer result; keeps the error's text.
fn code(state: &mut State, result: Result<(), Error>, io_error: c_int) -> c_int {
    match result {
        Ok(()) => ffi::SQLITE_OK,
        Err(e) => {
            let full = matches!(e, Error::NoSpace { .. } | Error::TableTooLarge { .. });
            state.last_error = Some(e.to_string());
            if full {
                ffi::SQLITE_FULL
            } else {
                io_error
            }
        }
    }
}

fn with_store<T>(state: &mut State, op: impl FnOnce(&mut FileStore) -> Result<T, Error>) -> Result<T, Error> {
    state.store.as_mut().ok_or(Error::Closed).and_then(op)
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite passes its registered VFS, a writable szOsFile-byte buffer at
    // `file`, a null or NUL-terminated name, and a null or writable `out_flags`.
    unsafe {
        (*file).pMethods = ptr::null();
        let instance = instance_of(vfs);
        let mut state = instance.state();
        let id = state.next_handle;
        state.next_handle += 1;
        let temp_kinds = ffi::SQLITE_OPEN_TEMP_DB
            | ffi::SQLITE_OPEN_TEMP_JOURNAL
            | ffi::SQLITE_OPEN_SUBJOURNAL
            | ffi::SQLITE_OPEN_TRANSIENT_DB
            | ffi::SQLITE_OPEN_MEMORY;
        let named = text(name).map(|n| n.into_owned());
        let (file_name, contents) = match named {
            Some(n) if flags & temp_kinds == 0 => {
                let exists = with_store(&mut state, |s| Ok(s.size(&n).is_some()));
                match exists {
                    Ok(true) => {}
                    Ok(false) if flags & ffi::SQLITE_OPEN_CREATE != 0 => {
                        if let Some(store) = state.store.as_mut() {
                            store.create(&n);
                        }
                    }
                    _ => return ffi::SQLITE_CANTOPEN,
                }
                (n.clone(), Contents::Flash(n))
            }
            other => (other.unwrap_or_else(|| format!("temp-{id}")), Contents::Memory(Vec::new())),
        };
        let open = Box::new(OpenFile {
            instance: instance as *const Instance,
            id,
            name: file_name,
            contents,
            lock: Level::None,
            delete_on_close: flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0,
            shm: None,
        });
        ptr::write(
            file as *mut FileHandle,
            FileHandle { base: ffi::sqlite3_file { pMethods: &IO_METHODS }, open: Box::into_raw(open) },
        );
        if !out_flags.is_null() {
            *out_flags = flags;
        }
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    // SAFETY: SQLite passes its registered VFS and a NUL-terminated name.
    let (instance, name) = unsafe { (instance_of(vfs), text(name)) };
    let Some(name) = name else {
        return ffi::SQLITE_IOERR_DELETE;
    };
    let mut state = instance.state();
    if with_store(&mut state, |s| Ok(s.size(&name).is_none())).unwrap_or(true) {
        return ffi::SQLITE_IOERR_DELETE_NOENT;
    }
    let result = with_store(&mut state, |s| {
        s.delete(&name)?;
        if sync_dir != 0 {
            s.sync()?;
        }
        Ok(())
    });
    code(&mut state, result, ffi::SQLITE_IOERR_DELETE)
}

unsafe extern "C" fn x_access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
    // SAFETY: SQLite passes its registered VFS, a NUL-terminated name and a writable
    // result.
    unsafe {
        let instance = instance_of(vfs);
        let size = text(name).and_then(|n| instance.state().store.as_ref().and_then(|s| s.size(&n)));
        // As the unix VFS: an empty file does not "exist" (no hot journal).
        *out = match flags {
            ffi::SQLITE_ACCESS_EXISTS => c_int::from(size.is_some_and(|s| s > 0)),
            _ => c_int::from(size.is_some()),
        };
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: SQLite passes a NUL-terminated name and an `n_out`-byte buffer.
    unsafe {
        let bytes = CStr::from_ptr(name).to_bytes_with_nul();
        if bytes.len() > n_out.max(0) as usize {
            return ffi::SQLITE_CANTOPEN;
        }
        ptr::copy_nonoverlapping(bytes.as_ptr() as *const c_char, out, bytes.len());
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_dl_open(_vfs: *mut ffi::sqlite3_vfs, _name: *const c_char) -> *mut c_void {
    ptr::null_mut()
}

unsafe extern "C" fn x_dl_error(_vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) {
    let message = b"extensions cannot be loaded on emulated flash\0";
    let len = message.len().min(n.max(0) as usize);
    if len > 0 {
        // SAFETY: SQLite passes an `n`-byte buffer; the copy ends with a NUL.
        unsafe {
            ptr::copy_nonoverlapping(message.as_ptr() as *const c_char, out, len);
            *out.add(len - 1) = 0;
        }
    }
}

unsafe extern "C" fn x_dl_sym(
    _vfs: *mut ffi::sqlite3_vfs,
    _handle: *mut c_void,
    _symbol: *const c_char,
) -> Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)> {
    None
}

unsafe extern "C" fn x_dl_close(_vfs: *mut ffi::sqlite3_vfs, _handle: *mut c_void) {}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let len = n.max(0) as usize;
    // SAFETY: SQLite passes its registered VFS and an `n`-byte buffer.
    unsafe {
        let buf = std::slice::from_raw_parts_mut(out as *mut u8, len);
        instance_of(vfs).state().rng.fill_bytes(buf);
    }
    n
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    // SAFETY: SQLite passes its registered VFS.
    let instance = unsafe { instance_of(vfs) };
    if let Some(store) = instance.state().store.as_mut() {
        store.advance(micros.max(0) as u64 * 1000);
    }
    micros
}

/// Simulated now in SQLite's Julian-day milliseconds.
fn julian_ms(instance: &Instance) -> i64 {
    let now_ns = instance.state().store.as_ref().map_or(0, |s| s.now());
    UNIX_EPOCH_JULIAN_MS + EPOCH_UNIX_MS + (now_ns / 1_000_000) as i64
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    // SAFETY: SQLite passes its registered VFS and a writable result.
    unsafe { *out = julian_ms(instance_of(vfs)) as f64 / 86_400_000.0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut ffi::sqlite3_int64) -> c_int {
    // SAFETY: SQLite passes its registered VFS and a writable result.
    unsafe { *out = julian_ms(instance_of(vfs)) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_get_last_error(_vfs: *mut ffi::sqlite3_vfs, _n: c_int, _out: *mut c_char) -> c_int {
    0
}

unsafe extern "C" fn on_statement(_mask: c_uint, context: *mut c_void, _p: *mut c_void, _x: *mut c_void) -> c_int {
    // SAFETY: the context is the instance given in `open_connection`, alive while
    // any connection is.
    let instance = unsafe { &*(context as *const Instance) };
    let mut state = instance.state();
    state.statements += 1;
    let cost = state.statement_cpu_ns;
    if let Some(store) = state.store.as_mut() {
        store.advance(cost);
    }
    0
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a handle `x_open` opened, once; the Box is ours.
    let open = unsafe { Box::from_raw((*(file as *mut FileHandle)).open) };
    // SAFETY: the instance outlives its files.
    let instance = unsafe { &*open.instance };
    let mut state = instance.state();
    state.locks.unlock(&open.name, open.id, open.lock, Level::None);
    if let Some(held) = open.shm {
        release_shm(&mut state, &open, held);
    }
    if let (Contents::Flash(name), true) = (&open.contents, open.delete_on_close) {
        let result = with_store(&mut state, |s| s.delete(name));
        return code(&mut state, result, ffi::SQLITE_IOERR_DELETE);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: an open handle and an `amount`-byte buffer, per SQLite's contract.
    let ((open, instance), buf) =
        unsafe { (open_file(file), std::slice::from_raw_parts_mut(buf as *mut u8, amount.max(0) as usize)) };
    let offset = offset.max(0) as u64;
    let got = match &open.contents {
        Contents::Memory(bytes) => {
            let start = (offset as usize).min(bytes.len());
            let n = (bytes.len() - start).min(buf.len());
            buf[..n].copy_from_slice(&bytes[start..start + n]);
            buf[n..].fill(0);
            n
        }
        Contents::Flash(name) => {
            let mut state = instance.state();
            match with_store(&mut state, |s| s.read(name, offset, buf)) {
                Ok(n) => n,
                Err(e) => return code(&mut state, Err(e), ffi::SQLITE_IOERR_READ),
            }
        }
    };
    if got < buf.len() {
        ffi::SQLITE_IOERR_SHORT_READ
    } else {
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amount: c_int, offset: i64) -> c_int {
    // SAFETY: an open handle and an `amount`-byte buffer, per SQLite's contract.
    let ((open, instance), data) =
        unsafe { (open_file(file), std::slice::from_raw_parts(buf as *const u8, amount.max(0) as usize)) };
    let offset = offset.max(0) as u64;
    match &mut open.contents {
        Contents::Memory(bytes) => {
            let end = offset as usize + data.len();
            if bytes.len() < end {
                bytes.resize(end, 0);
            }
            bytes[offset as usize..end].copy_from_slice(data);
            ffi::SQLITE_OK
        }
        Contents::Flash(name) => {
            let mut state = instance.state();
            let result = with_store(&mut state, |s| s.write(name, offset, data));
            code(&mut state, result, ffi::SQLITE_IOERR_WRITE)
        }
    }
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let size = size.max(0) as u64;
    match &mut open.contents {
        Contents::Memory(bytes) => {
            bytes.resize(size as usize, 0);
            ffi::SQLITE_OK
        }
        Contents::Flash(name) => {
            let mut state = instance.state();
            let result = with_store(&mut state, |s| s.truncate(name, size));
            code(&mut state, result, ffi::SQLITE_IOERR_TRUNCATE)
        }
    }
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    if matches!(open.contents, Contents::Memory(_)) {
        return ffi::SQLITE_OK;
    }
    let mut state = instance.state();
    let result = with_store(&mut state, |s| s.sync());
    code(&mut state, result, ffi::SQLITE_IOERR_FSYNC)
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, out: *mut i64) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let size = match &open.contents {
        Contents::Memory(bytes) => Some(bytes.len() as u64),
        Contents::Flash(name) => instance.state().store.as_ref().and_then(|s| s.size(name)),
    };
    let Some(size) = size else {
        return ffi::SQLITE_IOERR_FSTAT;
    };
    // SAFETY: SQLite passes a writable result.
    unsafe { *out = size as i64 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let want = Level::from_sqlite(level);
    match instance.state().locks.lock(&open.name, open.id, open.lock, want) {
        Ok(held) => {
            open.lock = held;
            ffi::SQLITE_OK
        }
        Err((_, held)) => {
            open.lock = held;
            ffi::SQLITE_BUSY
        }
    }
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let mut state = instance.state();
    open.lock = state.locks.unlock(&open.name, open.id, open.lock, Level::from_sqlite(level));
    if let (Contents::Flash(name), true, Some(store)) =
        (&open.contents, level <= ffi::SQLITE_LOCK_SHARED, state.store.as_mut())
    {
        store.abandon(name);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: an open handle and a writable result.
    unsafe {
        let (open, instance) = open_file(file);
        *out = c_int::from(instance.state().locks.reserved(&open.name));
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    if op != ffi::SQLITE_FCNTL_PRAGMA {
        return ffi::SQLITE_NOTFOUND;
    }
    // SAFETY: an open handle; for SQLITE_FCNTL_PRAGMA `arg` is SQLite's char*[3]: the
    // result slot (null), the pragma's name, its value or null.
    let ((_, instance), slots, name, value) = unsafe {
        let slots = arg as *mut *mut c_char;
        (open_file(file), slots, text(*slots.add(1)), text(*slots.add(2)))
    };
    let mut state = instance.state();
    let Some(store) = state.store.as_mut().filter(|s| s.transactional()) else {
        return ffi::SQLITE_NOTFOUND;
    };
    let (Some(name), Some(value)) = (name, value) else {
        return ffi::SQLITE_NOTFOUND;
    };
    let value = value.to_ascii_lowercase();
    match name.to_ascii_lowercase().as_str() {
        "synchronous" => {
            store.set_grouping(value == "normal" || value == "1");
            ffi::SQLITE_NOTFOUND
        }
        "journal_mode" if value != "off" => {
            const OFF: &[u8] = b"off\0";
            // SAFETY: SQLite frees the result with sqlite3_free; the copy fits.
            unsafe {
                let out = ffi::sqlite3_malloc(OFF.len() as c_int) as *mut c_char;
                if out.is_null() {
                    return ffi::SQLITE_NOMEM;
                }
                ptr::copy_nonoverlapping(OFF.as_ptr() as *const c_char, out, OFF.len());
                *slots = out;
            }
            ffi::SQLITE_OK
        }
        _ => ffi::SQLITE_NOTFOUND,
    }
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: an open handle.
    let (_, instance) = unsafe { open_file(file) };
    instance.state().store.as_ref().map_or(4096, |s| s.page_bytes() as c_int)
}

unsafe extern "C" fn x_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    // A write rewrites whole logical pages out of place, so a cut never damages bytes
    // beyond those written (as SQLite assumes of Ext4 by default).
    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    region_bytes: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: an open handle and a writable result.
    let (open, instance) = unsafe { open_file(file) };
    let mut state = instance.state();
    let shm = state.shm.entry(open.name.clone()).or_default();
    if open.shm.is_none() {
        open.shm = Some((0, 0));
        shm.users += 1;
    }
    let index = region.max(0) as usize;
    let mut mapped = ptr::null_mut();
    if index < shm.regions.len() || extend != 0 {
        while shm.regions.len() <= index {
            shm.regions.push(ShmRegion::zeroed(region_bytes.max(0) as usize));
        }
        mapped = shm.regions[index].ptr as *mut c_void;
    }
    // SAFETY: SQLite passes a writable result.
    unsafe { *out = mapped };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let Some((shared, exclusive)) = open.shm.as_mut() else {
        return ffi::SQLITE_IOERR_SHMLOCK;
    };
    let slots = offset.max(0) as usize..(offset.max(0) + n.max(0)) as usize;
    let lock = flags & ffi::SQLITE_SHM_LOCK != 0;
    let exclusive_mode = flags & ffi::SQLITE_SHM_EXCLUSIVE != 0;
    match instance.state().locks.shm_lock(&open.name, open.id, slots, lock, exclusive_mode, shared, exclusive) {
        Ok(()) => ffi::SQLITE_OK,
        Err(_) => ffi::SQLITE_BUSY,
    }
}

unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, _delete: c_int) -> c_int {
    // SAFETY: an open handle.
    let (open, instance) = unsafe { open_file(file) };
    let Some((shared, exclusive)) = open.shm.take() else {
        return ffi::SQLITE_OK;
    };
    release_shm(&mut instance.state(), open, (shared, exclusive));
    ffi::SQLITE_OK
}

/// Drops a handle's shm locks and its use of the WAL index, freeing the index when no
/// handle maps it (SQLite then holds no pointer into it).
fn release_shm(state: &mut State, open: &OpenFile, (mut shared, mut exclusive): (u8, u8)) {
    let _ = state.locks.shm_lock(&open.name, open.id, 0..8, false, false, &mut shared, &mut exclusive);
    let last = state.shm.get_mut(&open.name).is_some_and(|shm| {
        shm.users = shm.users.saturating_sub(1);
        shm.users == 0
    });
    if last {
        state.shm.remove(&open.name);
    }
}
