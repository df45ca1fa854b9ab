//! A kernel's arguments as the host passes them to a launch, a 64-bit word each (pointers and
//! integers as they are, floats by their bits): on a GPU through the driver, on the SIMT emulator
//! rebuilt into the kernel's typed parameters. [`kernel!`](crate::kernel) gives every entry point a
//! typed `NAME::args(...)` that makes them, so that a launch with the wrong count or types of
//! arguments does not compile.

use std::vec::Vec;

/// A kernel parameter as the host passes it (pointers, integers, floats).
pub trait KernelParam: Sized {
    /// The parameter from the word the host passed.
    fn from_raw(raw: u64) -> Self;
    /// The word the host passes.
    fn to_raw(self) -> u64;
}

impl<T> KernelParam for *const T {
    fn from_raw(raw: u64) -> Self {
        raw as usize as *const T
    }
    fn to_raw(self) -> u64 {
        self as usize as u64
    }
}

impl<T> KernelParam for *mut T {
    fn from_raw(raw: u64) -> Self {
        raw as usize as *mut T
    }
    fn to_raw(self) -> u64 {
        self as usize as u64
    }
}

macro_rules! integer_params {
    ($($t:ty),*) => {$(
        impl KernelParam for $t {
            fn from_raw(raw: u64) -> Self {
                raw as $t
            }
            fn to_raw(self) -> u64 {
                self as u64
            }
        }
    )*};
}
integer_params!(u64, i64, u32, i32, u16, i16, u8, i8, usize);

impl KernelParam for f32 {
    fn from_raw(raw: u64) -> Self {
        f32::from_bits(raw as u32)
    }
    fn to_raw(self) -> u64 {
        self.to_bits() as u64
    }
}

impl KernelParam for f64 {
    fn from_raw(raw: u64) -> Self {
        f64::from_bits(raw)
    }
    fn to_raw(self) -> u64 {
        self.to_bits()
    }
}

/// One launch's kernel and arguments, made by the kernel's typed `NAME::args(...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArgs {
    name: &'static str,
    words: Vec<u64>,
}

impl KernelArgs {
    /// Arguments of the kernel `name`, already as words (what `args` of [`kernel!`](crate::kernel)
    /// makes from typed values).
    pub fn new(name: &'static str, words: &[u64]) -> Self {
        KernelArgs { name, words: words.to_vec() }
    }

    /// The kernel's name in the PTX.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The arguments, a word each.
    pub fn words(&self) -> &[u64] {
        &self.words
    }
}
