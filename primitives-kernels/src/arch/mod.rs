//! Every device intrinsic of the crate, and nothing else.
//!
//! On `nvptx64` each function is one PTX instruction (inline assembly or an LLVM NVVM intrinsic, see
//! `nvptx.rs`). On the host the same functions exist with the same signatures (`host.rs`), so the
//! algorithms above this module are plain generic Rust that compiles for both targets.
//!
//! Hazards of rustc's NVPTX path and how this module handles them (ARCHITECTURE.md has the long form):
//! * Barriers are the LLVM intrinsic `llvm.nvvm.barrier0`, which LLVM knows to be convergent; the kernel
//!   build also turns off MIR JumpThreading (rust-lang/rust#137086), which could duplicate a barrier
//!   into divergent branches.
//! * Warp shuffles, votes and `bar.warp.sync` are LLVM NVVM intrinsics too (convergent), not `asm!`.
//! * `core::sync::atomic` lowers to system-scope atomics without ordering and `fence` does not compile
//!   (rust-lang/rust#136480): scoped atomics, acquire/release accesses and fences are inline PTX here.

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

use bytemuck::Pod;

/// Threads per warp on every NVIDIA GPU this crate targets.
pub const WARP_SIZE: u32 = 32;
/// Member mask naming all 32 lanes of a warp.
pub const FULL_MASK: u32 = u32::MAX;
/// Largest element, in bytes, that the generic shuffles and coherent loads move (16 words).
pub const MAX_ELEMENT_BYTES: usize = 64;

const MAX_WORDS: usize = MAX_ELEMENT_BYTES / 4;

/// Index of the calling thread's warp within its block.
#[inline(always)]
pub fn warp_idx() -> u32 {
    thread_idx_x() / WARP_SIZE
}

/// A `T` of 4, 8 or 16 bytes at a `.shared` address (see [`shared_address`]), with one `ld.shared`
/// (`.b32`, `.v2.u32` or `.v4.u32`).
///
/// # Safety
/// `address` holds a `T` in shared memory, aligned to its size.
#[inline(always)]
pub unsafe fn load_shared<T: Pod>(address: u32) -> T {
    const { assert!(matches!(size_of::<T>(), 4 | 8 | 16), "elements of 4, 8 or 16 bytes") };
    // SAFETY: forwarded; each arm runs only for its own size, so the casts are between equal sizes.
    unsafe {
        match size_of::<T>() {
            4 => bytemuck::cast(load_shared_b32(address)),
            8 => bytemuck::cast(load_shared_v2(address)),
            _ => bytemuck::cast(load_shared_v4(address)),
        }
    }
}

/// Stores a `T` of 4, 8 or 16 bytes at a `.shared` address with one `st.shared` (`.b32`,
/// `.v2.u32` or `.v4.u32`).
///
/// # Safety
/// `address` room for a `T` in shared memory, aligned to its size.
#[inline(always)]
pub unsafe fn store_shared<T: Pod>(address: u32, value: T) {
    const { assert!(matches!(size_of::<T>(), 4 | 8 | 16), "elements of 4, 8 or 16 bytes") };
    // SAFETY: forwarded; each arm runs only for its own size, so the casts are between equal sizes.
    unsafe {
        match size_of::<T>() {
            4 => store_shared_b32(address, bytemuck::cast(value)),
            8 => store_shared_v2(address, bytemuck::cast(value)),
            _ => store_shared_v4(address, bytemuck::cast(value)),
        }
    }
}

/// Number of 32-bit words a `T` occupies (rounded up).
#[inline(always)]
const fn word_count<T>() -> usize {
    const { assert!(core::mem::size_of::<T>() <= MAX_ELEMENT_BYTES, "element larger than 64 bytes") };
    core::mem::size_of::<T>().div_ceil(4)
}

#[inline(always)]
fn to_words<T: Pod>(value: T) -> [u32; MAX_WORDS] {
    let mut words = [0u32; MAX_WORDS];
    // SAFETY: `word_count` asserts size_of::<T>() <= 64 bytes, the size of `words`; T is Pod, so
    // copying its bytes is valid, and the two regions are distinct locals.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&value as *const T).cast::<u8>(),
            words.as_mut_ptr().cast::<u8>(),
            core::mem::size_of::<T>(),
        )
    };
    words
}

#[inline(always)]
fn from_words<T: Pod>(words: &[u32; MAX_WORDS]) -> T {
    // SAFETY: `words` holds at least size_of::<T>() bytes (checked by `word_count`) and every bit
    // pattern is a valid T because T is Pod; read_unaligned places no alignment demand.
    unsafe { core::ptr::read_unaligned(words.as_ptr().cast::<T>()) }
}

/// Applies `$f` (an expression of the word `$w`) to each 32-bit word of `$value`. Common sizes go
/// through `bytemuck::cast` so that the words stay in registers; other sizes through a word array.
/// A macro rather than a closure so that `#[track_caller]` sees the caller's location.
macro_rules! map_words {
    ($t:ty, $value:expr, |$w:ident| $f:expr) => {{
        let value: $t = $value;
        match size_of::<$t>() {
            4 => {
                let $w: u32 = bytemuck::cast(value);
                bytemuck::cast::<u32, $t>($f)
            }
            8 => {
                let words: [u32; 2] = bytemuck::cast(value);
                let mut out = [0u32; 2];
                for (o, &$w) in out.iter_mut().zip(words.iter()) {
                    *o = $f;
                }
                bytemuck::cast::<[u32; 2], $t>(out)
            }
            16 => {
                let words: [u32; 4] = bytemuck::cast(value);
                let mut out = [0u32; 4];
                for (o, &$w) in out.iter_mut().zip(words.iter()) {
                    *o = $f;
                }
                bytemuck::cast::<[u32; 4], $t>(out)
            }
            _ => {
                let mut words = to_words(value);
                for word in words.iter_mut().take(word_count::<$t>()) {
                    let $w = *word;
                    *word = $f;
                }
                from_words(&words)
            }
        }
    }};
}

/// `shfl.sync.down` of any `Pod` value, word by word: lane `i` receives lane `i + delta`'s value
/// (its own when `i + delta` is past the warp).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_down_sync<T: Pod>(mask: u32, value: T, delta: u32) -> T {
    map_words!(T, value, |w| shfl_down_sync_u32(mask, w, delta))
}

/// `shfl.sync.up` of any `Pod` value: lane `i` receives lane `i - delta`'s value (its own when
/// `i < delta`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_up_sync<T: Pod>(mask: u32, value: T, delta: u32) -> T {
    map_words!(T, value, |w| shfl_up_sync_u32(mask, w, delta))
}

/// `shfl.sync.bfly` of any `Pod` value: lane `i` receives lane `i ^ lane_mask`'s value.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_xor_sync<T: Pod>(mask: u32, value: T, lane_mask: u32) -> T {
    map_words!(T, value, |w| shfl_xor_sync_u32(mask, w, lane_mask))
}

/// `shfl.sync.idx` of any `Pod` value: every lane receives lane `src`'s value.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_idx_sync<T: Pod>(mask: u32, value: T, src: u32) -> T {
    map_words!(T, value, |w| shfl_idx_sync_u32(mask, w, src))
}

/// Reads a `T` with `ld.relaxed.gpu` word by word: sees data other blocks published through a
/// release/acquire pair or a fence, never a stale L1 line.
///
/// # Safety
/// `ptr` must be valid for reads of a `T` and 4-byte aligned; `T`'s size is a multiple of 4 (checked
/// at compile time).
#[inline(always)]
#[allow(unused_assignments)] // the word index after the last word
pub unsafe fn load_relaxed_gpu<T: Pod>(ptr: *const T) -> T {
    const { assert!(core::mem::size_of::<T>().is_multiple_of(4), "element size must be whole words") };
    let src = ptr.cast::<u32>();
    let mut index = 0;
    map_words!(T, T::zeroed(), |_w| {
        // SAFETY: word `index` lies inside the T the caller vouches for (its size is whole words).
        let word = unsafe { load_relaxed_u32_gpu(src.add(index)) };
        index += 1;
        word
    })
}
