//! libc's own functions behind the interposed ones, found with `dlsym(RTLD_NEXT, ...)` on first use.

use std::ffi::{c_char, c_int, c_ulong, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The next definition of `name` (a NUL-terminated symbol name) after this library's, cached in
/// `slot`. Aborts if there is none: libc always has these.
fn next(slot: &AtomicPtr<c_void>, name: &'static [u8]) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: `name` is a NUL-terminated symbol name; `RTLD_NEXT` asks the loader for the next
    // object's definition, which has no other precondition.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr().cast()) };
    if p.is_null() {
        // Nothing can be done without libc's own function; printing could recurse into `write`.
        std::process::abort();
    }
    slot.store(p, Ordering::Release);
    p
}

macro_rules! real {
    ($($name:ident: fn($($arg:ty),*) -> $ret:ty;)+) => {
        $(
            #[doc = concat!("libc's `", stringify!($name), "`.")]
            pub(crate) fn $name() -> unsafe extern "C" fn($($arg),*) -> $ret {
                static SLOT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
                let p = next(&SLOT, concat!(stringify!($name), "\0").as_bytes());
                // SAFETY: `p` is libc's definition of this very function, whose C signature is the
                // one written here.
                unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> $ret>(p) }
            }
        )+
    };
}

real! {
    open: fn(*const c_char, c_int, libc::mode_t) -> c_int;
    openat: fn(c_int, *const c_char, c_int, libc::mode_t) -> c_int;
    fstat: fn(c_int, *mut libc::stat) -> c_int;
    stat: fn(*const c_char, *mut libc::stat) -> c_int;
    ioctl: fn(c_int, c_ulong, *mut c_void) -> c_int;
    write: fn(c_int, *const c_void, usize) -> isize;
    mmap: fn(*mut c_void, usize, c_int, c_int, c_int, libc::off_t) -> *mut c_void;
    close: fn(c_int) -> c_int;
    dup: fn(c_int) -> c_int;
    dup2: fn(c_int, c_int) -> c_int;
    dup3: fn(c_int, c_int, c_int) -> c_int;
    fcntl: fn(c_int, c_int, c_ulong) -> c_int;
}
