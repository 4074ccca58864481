//! What the verbs take as inputs: batches of items gathered into one tape with one copy, `(data, offsets)`
//! tapes lent without a copy, per-item arrays and single paths, and the [`Accepts`] bound that lets a
//! deferred receiver take only owned inputs.
//!
//! A blocking receiver (`&Model`, [`On`](crate::On)) lends its inputs: a slice, array or `Vec` of items
//! (`&str`, `String`, `&[u8]`, `Vec<u8>` for bytes; paths for files; `&[f32]`, `Vec<f32>` for samples), or a
//! `(data, offsets)` pair. The library reads a deferred call's inputs after the verb returns, so a deferred
//! receiver ([`DeferredOn`](crate::DeferredOn)) takes owned inputs only: items in a `Vec`, an array or a
//! boxed slice of owned or `'static` values, a tape as `(Vec<_>, Vec<usize>)` (or of `'static` slices), and a
//! `PathBuf`, `String` or `'static` path. Lending it `&Vec<String>` fails to compile with "a deferred receiver
//! needs owned inputs".

use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::call::{Measure, RawTape};
use crate::error::{invalid, mismatch};
use crate::Result;

/// The mode of a blocking receiver, which lends its inputs for the duration of the call.
#[derive(Debug)]
pub struct Lent(());

/// The mode of a deferred receiver, which takes owned or `'static` inputs, configs and handlers.
#[derive(Debug)]
pub struct Owned(());

/// Which config lifetimes a receiver's mode admits: any for [`Lent`], `'static` alone for [`Owned`], so a
/// deferred call's config borrowing a local fails to compile as "does not live long enough".
pub trait Admits<'c>: sealed::Sealed {}
impl<'c> Admits<'c> for Lent {}
impl Admits<'static> for Owned {}

/// What a verb's input holds: its element type and how its items are spelled.
pub trait Kind: sealed::Sealed {
    /// The element of the tape the library reads.
    type Element: Copy + 'static;
}

/// Items of bytes: UTF-8 texts (a byte per token), choices, pixels, training contents.
#[derive(Debug)]
pub struct Bytes(());
/// Items naming files, as the OS's bytes on Unix.
#[derive(Debug)]
pub struct Paths(());
/// Items of mono `f32` audio samples.
#[derive(Debug)]
pub struct Samples(());
/// One value per item of the verb's first tape, such as image heights or training modalities.
#[derive(Debug)]
pub struct Each<E>(PhantomData<fn() -> E>);
/// A single path, such as the checkpoint a trainer saves.
#[derive(Debug)]
pub struct OnePath(());

impl Kind for Bytes {
    type Element = u8;
}
impl Kind for Paths {
    type Element = u8;
}
impl Kind for Samples {
    type Element = f32;
}
impl<E: Copy + 'static> Kind for Each<E> {
    type Element = E;
}
impl Kind for OnePath {
    type Element = u8;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Lent {}
    impl Sealed for super::Owned {}
    impl Sealed for super::Bytes {}
    impl Sealed for super::Paths {}
    impl Sealed for super::Samples {}
    impl<E> Sealed for super::Each<E> {}
    impl Sealed for super::OnePath {}

    pub trait SealedItem<K> {}
}

/// One item of a batch of kind `K`: `str`, `String`, `[u8]`, `Vec<u8>` (and boxed, shared and borrowed forms)
/// for [`Bytes`]; `Path`, `PathBuf`, `OsStr`, `OsString`, `str` and `String` for [`Paths`]; `[f32]` and
/// `Vec<f32>` for [`Samples`].
pub trait Item<K: Kind>: sealed::SealedItem<K> {
    /// The item's elements; fails only for a path that is not UTF-8 where the OS needs it.
    #[doc(hidden)]
    fn elements(&self) -> Result<&[K::Element]>;
}

impl<K: Kind, T: Item<K> + ?Sized> sealed::SealedItem<K> for &T {}
impl<K: Kind, T: Item<K> + ?Sized> Item<K> for &T {
    fn elements(&self) -> Result<&[K::Element]> {
        (**self).elements()
    }
}

macro_rules! items {
    ($kind:ty, $element:ty, |$item:ident| $body:expr, $($ty:ty),+ $(,)?) => {$(
        impl sealed::SealedItem<$kind> for $ty {}
        impl Item<$kind> for $ty {
            fn elements(&self) -> Result<&[$element]> {
                let $item = self;
                $body
            }
        }
    )+};
}

items!(
    Bytes,
    u8,
    |item| Ok(AsRef::<str>::as_ref(item).as_bytes()),
    str,
    String,
    Box<str>,
    Cow<'_, str>,
    Arc<str>,
    Rc<str>
);
items!(
    Bytes,
    u8,
    |item| Ok(AsRef::<[u8]>::as_ref(item)),
    [u8],
    Vec<u8>,
    Box<[u8]>,
    Cow<'_, [u8]>,
    Arc<[u8]>,
    Rc<[u8]>
);
items!(
    Paths,
    u8,
    |item| crate::marshal::path_bytes(AsRef::<Path>::as_ref(item)),
    Path,
    PathBuf,
    OsStr,
    OsString,
    str,
    String,
    Box<Path>,
    Cow<'_, Path>,
    Arc<Path>,
    Rc<Path>
);
items!(
    Samples,
    f32,
    |item| Ok(AsRef::<[f32]>::as_ref(item)),
    [f32],
    Vec<f32>,
    Box<[f32]>,
    Cow<'_, [f32]>,
    Arc<[f32]>,
    Rc<[f32]>
);

impl<const N: usize> sealed::SealedItem<Bytes> for [u8; N] {}
impl<const N: usize> Item<Bytes> for [u8; N] {
    fn elements(&self) -> Result<&[u8]> {
        Ok(self)
    }
}
impl<const N: usize> sealed::SealedItem<Samples> for [f32; N] {}
impl<const N: usize> Item<Samples> for [f32; N] {
    fn elements(&self) -> Result<&[f32]> {
        Ok(self)
    }
}

/// The messages a tape's refusals carry, named after the C parameter, as the library words them.
#[derive(Debug)]
pub struct TapeNames {
    /// For offsets that fall: `"texts's offsets fall"`.
    pub fall: &'static str,
    /// For offsets that leave the data: `"texts's offsets leave its data"`.
    pub leave: &'static str,
    /// For a per-item array whose length disagrees with the items: `"heights count one per item"`.
    pub per_item: &'static str,
}

/// An input a receiver of mode `M` accepts as an input of kind `K`: a blocking receiver ([`Lent`]) takes
/// any [`Batch`], and a deferred one ([`Owned`]) takes owned or `'static` inputs only.
#[diagnostic::on_unimplemented(
    message = "a deferred receiver needs owned inputs",
    label = "a deferred call reads this after the verb returns, so it cannot be borrowed",
    note = "pass a `Vec` or an array of owned or `'static` items, a `(Vec<_>, Vec<usize>)` tape, or a `PathBuf`"
)]
pub trait Accepts<M, K: Kind> {
    /// What the call holds while it runs.
    #[doc(hidden)]
    type Kept;
    /// Checks the input and answers the words of scratch it needs and the items it holds.
    #[doc(hidden)]
    fn measure(&self, names: &'static TapeNames) -> Result<Measure>;
    /// Gathers the input into its part of the scratch, advancing `tail` past it.
    #[doc(hidden)]
    fn keep(self, tail: &mut &mut [usize]) -> Self::Kept;
    /// The tape the library reads.
    #[doc(hidden)]
    fn tape(kept: &Self::Kept) -> RawTape<K::Element>;
}

/// What a blocking receiver lends to the library for the duration of a call, as input `I` of kind `K`: a
/// slice, an array, a `Vec` or a boxed slice of [`Item`]s, gathered into one tape with one copy, or a
/// `(data, offsets)` pair lent without a copy once its offsets are checked.
///
/// Implemented for the marker [`Lend`] (so that a mistyped batch reports this trait's message rather than
/// the deferred one of [`Accepts`]).
#[diagnostic::on_unimplemented(
    message = "the verb takes no batch of this type",
    label = "expected a slice, array or `Vec` of items, or a `(data, offsets)` tape",
    note = "items are `&str`, `String`, `&[u8]` or `Vec<u8>` for bytes, paths for files, `&[f32]` or `Vec<f32>` for samples"
)]
pub trait Batch<I, K: Kind> {
    /// What the call holds while it runs.
    #[doc(hidden)]
    type Kept;
    /// Checks the input and answers the words of scratch it needs and the items it holds.
    #[doc(hidden)]
    fn measure(input: &I, names: &'static TapeNames) -> Result<Measure>;
    /// Gathers the input into its part of the scratch, advancing `tail` past it.
    #[doc(hidden)]
    fn keep(input: I, tail: &mut &mut [usize]) -> Self::Kept;
    /// The tape the library reads.
    #[doc(hidden)]
    fn tape(kept: &Self::Kept) -> RawTape<K::Element>;
}

/// The marker the [`Batch`] implementations hang on.
#[derive(Debug)]
pub struct Lend(());

impl<K: Kind, T> Accepts<Lent, K> for T
where
    Lend: Batch<T, K>,
{
    type Kept = <Lend as Batch<T, K>>::Kept;
    fn measure(&self, names: &'static TapeNames) -> Result<Measure> {
        <Lend as Batch<T, K>>::measure(self, names)
    }
    fn keep(self, tail: &mut &mut [usize]) -> Self::Kept {
        <Lend as Batch<T, K>>::keep(self, tail)
    }
    fn tape(kept: &Self::Kept) -> RawTape<K::Element> {
        <Lend as Batch<T, K>>::tape(kept)
    }
}

/// Words of scratch that hold `values` elements of `E`.
fn words_of<E>(values: usize) -> Result<usize> {
    let bytes = values
        .checked_mul(size_of::<E>())
        .ok_or(invalid("an input is too large"))?;
    Ok(bytes.div_ceil(size_of::<usize>()))
}

/// Splits `words` off the front of the scratch.
fn take<'t>(tail: &mut &'t mut [usize], words: usize) -> &'t mut [usize] {
    let (head, rest) = core::mem::take(tail).split_at_mut(words);
    *tail = rest;
    head
}

/// Measures items to gather: `count + 1` offsets, then their elements.
fn measure_items<K: Kind, T: Item<K>>(items: &[T]) -> Result<Measure> {
    let mut values = 0usize;
    for item in items {
        values = values
            .checked_add(item.elements()?.len())
            .ok_or(invalid("an input is too large"))?;
    }
    let words = words_of::<K::Element>(values)?
        .checked_add(items.len() + 1)
        .ok_or(invalid("an input is too large"))?;
    Ok(Measure {
        words,
        count: items.len(),
    })
}

/// Gathers items into one tape at the front of the scratch: the offsets, then the elements, one copy.
fn gather_items<K: Kind, T: Item<K>>(items: &[T], tail: &mut &mut [usize]) -> RawTape<K::Element> {
    const { assert!(align_of::<usize>() >= 4) };
    let offsets = take(tail, items.len() + 1);
    let mut at = 0usize;
    offsets[0] = 0;
    for (i, item) in items.iter().enumerate() {
        at += item.elements().map_or(0, <[_]>::len);
        offsets[i + 1] = at;
    }
    let words = words_of::<K::Element>(at).unwrap_or(0);
    let data = take(tail, words).as_mut_ptr().cast::<K::Element>();
    let mut written = 0usize;
    for item in items {
        let elements = item.elements().unwrap_or(&[]);
        let len = elements.len().min(at - written);
        // SAFETY: `data` holds `at` elements (words were measured from the same items), aligned as
        // `usize`, which suffices for `u8` and `f32`, and `written + len <= at`.
        unsafe { core::ptr::copy_nonoverlapping(elements.as_ptr(), data.add(written), len) };
        written += len;
    }
    RawTape {
        data,
        length: at,
        offsets: offsets.as_ptr(),
        count: items.len(),
    }
}

/// Checks a `(data, offsets)` tape as the library does and answers its items: offsets may not fall or
/// leave the data (`Status::ShapeMismatch`); empty offsets are an empty tape.
pub(crate) fn check_tape(
    length: usize,
    offsets: &[usize],
    names: &'static TapeNames,
) -> Result<usize> {
    let Some(&last) = offsets.last() else {
        return Ok(0);
    };
    if offsets.windows(2).any(|pair| pair[0] > pair[1]) {
        return Err(mismatch(names.fall));
    }
    if last > length {
        return Err(mismatch(names.leave));
    }
    Ok(offsets.len() - 1)
}

/// The tape a checked `(data, offsets)` pair lends, `NULL` offsets for an empty one.
pub(crate) fn lend<E>(data: &[E], offsets: &[usize]) -> RawTape<E> {
    RawTape {
        data: crate::marshal::slice(data),
        length: data.len(),
        offsets: crate::marshal::slice(offsets),
        count: offsets.len().saturating_sub(1),
    }
}

/// A per-item array's length against the items of the verb's first tape (`Status::ShapeMismatch`).
pub(crate) fn per_item(values: usize, items: usize, names: &'static TapeNames) -> Result<()> {
    if values == items {
        Ok(())
    } else {
        Err(mismatch(names.per_item))
    }
}

/// The scratch-free tape of a per-item array.
fn values<E>(values: &[E]) -> RawTape<E> {
    RawTape {
        data: crate::marshal::slice(values),
        length: values.len(),
        offsets: core::ptr::null(),
        count: values.len(),
    }
}

/// Copies per-item values into the scratch.
fn gather_values<E: Copy>(source: &[E], tail: &mut &mut [usize]) -> RawTape<E> {
    const { assert!(align_of::<E>() <= align_of::<usize>()) };
    let words = words_of::<E>(source.len()).unwrap_or(0);
    let data = take(tail, words).as_mut_ptr().cast::<E>();
    // SAFETY: the scratch holds `source.len()` values of `E`, suitably aligned.
    unsafe { core::ptr::copy_nonoverlapping(source.as_ptr(), data, source.len()) };
    RawTape {
        data,
        length: source.len(),
        offsets: core::ptr::null(),
        count: source.len(),
    }
}

// Batches of items, lent by blocking receivers and gathered into one tape ---------------------------------

macro_rules! batches {
    ($($kind:ty),+) => {$(
        batches!(@gather $kind; &[T]; &&[T]; &Vec<T>; Vec<T>; Box<[T]>; &Box<[T]>);
        batches!(@gather_array $kind; &[T; N]; [T; N]);
        /// A `(data, offsets)` tape, lent without a copy once its offsets are checked.
        impl<D: AsRef<[<$kind as Kind>::Element]>, O: AsRef<[usize]>> Batch<(D, O), $kind> for Lend {
            type Kept = (D, O);
            fn measure(input: &(D, O), names: &'static TapeNames) -> Result<Measure> {
                let count = check_tape(input.0.as_ref().len(), input.1.as_ref(), names)?;
                Ok(Measure { words: 0, count })
            }
            fn keep(input: (D, O), _: &mut &mut [usize]) -> Self::Kept { input }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { lend(kept.0.as_ref(), kept.1.as_ref()) }
        }

        // Owned inputs of deferred receivers: items gathered into the call's box, tapes moved into it.
        impl<T: Item<$kind> + 'static> Accepts<Owned, $kind> for Vec<T> {
            type Kept = RawTape<<$kind as Kind>::Element>;
            fn measure(&self, _: &'static TapeNames) -> Result<Measure> { measure_items::<$kind, T>(self) }
            fn keep(self, tail: &mut &mut [usize]) -> Self::Kept { gather_items::<$kind, T>(&self, tail) }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { *kept }
        }
        impl<T: Item<$kind> + 'static, const N: usize> Accepts<Owned, $kind> for [T; N] {
            type Kept = RawTape<<$kind as Kind>::Element>;
            fn measure(&self, _: &'static TapeNames) -> Result<Measure> { measure_items::<$kind, T>(self) }
            fn keep(self, tail: &mut &mut [usize]) -> Self::Kept { gather_items::<$kind, T>(&self, tail) }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { *kept }
        }
        impl<T: Item<$kind> + 'static> Accepts<Owned, $kind> for Box<[T]> {
            type Kept = RawTape<<$kind as Kind>::Element>;
            fn measure(&self, _: &'static TapeNames) -> Result<Measure> { measure_items::<$kind, T>(self) }
            fn keep(self, tail: &mut &mut [usize]) -> Self::Kept { gather_items::<$kind, T>(&self, tail) }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { *kept }
        }
        /// A `(data, offsets)` tape moved into the call, lent without a copy once its offsets are checked.
        impl<D, O> Accepts<Owned, $kind> for (D, O)
        where
            D: AsRef<[<$kind as Kind>::Element]> + Send + 'static,
            O: AsRef<[usize]> + Send + 'static,
        {
            type Kept = (D, O);
            fn measure(&self, names: &'static TapeNames) -> Result<Measure> {
                let count = check_tape(self.0.as_ref().len(), self.1.as_ref(), names)?;
                Ok(Measure { words: 0, count })
            }
            fn keep(self, _: &mut &mut [usize]) -> Self::Kept { self }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { lend(kept.0.as_ref(), kept.1.as_ref()) }
        }
    )+};
    (@gather $kind:ty; $($ty:ty);+) => {$(
        impl<T: Item<$kind>> Batch<$ty, $kind> for Lend {
            type Kept = RawTape<<$kind as Kind>::Element>;
            fn measure(input: &$ty, _: &'static TapeNames) -> Result<Measure> {
                measure_items::<$kind, T>(AsRef::<[T]>::as_ref(input))
            }
            fn keep(input: $ty, tail: &mut &mut [usize]) -> Self::Kept {
                gather_items::<$kind, T>(AsRef::<[T]>::as_ref(&input), tail)
            }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { *kept }
        }
    )+};
    (@gather_array $kind:ty; $($ty:ty);+) => {$(
        impl<T: Item<$kind>, const N: usize> Batch<$ty, $kind> for Lend {
            type Kept = RawTape<<$kind as Kind>::Element>;
            fn measure(input: &$ty, _: &'static TapeNames) -> Result<Measure> {
                measure_items::<$kind, T>(AsRef::<[T]>::as_ref(input))
            }
            fn keep(input: $ty, tail: &mut &mut [usize]) -> Self::Kept {
                gather_items::<$kind, T>(AsRef::<[T]>::as_ref(&input), tail)
            }
            fn tape(kept: &Self::Kept) -> RawTape<<$kind as Kind>::Element> { *kept }
        }
    )+};
}

batches!(Bytes, Paths, Samples);

// Per-item arrays --------------------------------------------------------------------------------------------

macro_rules! lent_values {
    ($($ty:ty $(, const $n:ident)?);+) => {$(
        impl<'x, E: Copy + 'static $(, const $n: usize)?> Batch<$ty, Each<E>> for Lend {
            type Kept = $ty;
            fn measure(input: &$ty, _: &'static TapeNames) -> Result<Measure> {
                Ok(Measure { words: 0, count: AsRef::<[E]>::as_ref(input).len() })
            }
            fn keep(input: $ty, _: &mut &mut [usize]) -> Self::Kept { input }
            fn tape(kept: &Self::Kept) -> RawTape<E> { values(AsRef::<[E]>::as_ref(kept)) }
        }
    )+};
}

lent_values!(&'x [E]; &'x [E; N], const N; &'x Vec<E>; [E; N], const N; Vec<E>; Box<[E]>);

macro_rules! owned_values {
    ($($ty:ty $(, const $n:ident)?);+) => {$(
        impl<E: Copy + 'static $(, const $n: usize)?> Accepts<Owned, Each<E>> for $ty {
            type Kept = RawTape<E>;
            fn measure(&self, _: &'static TapeNames) -> Result<Measure> {
                let values = AsRef::<[E]>::as_ref(self);
                Ok(Measure { words: words_of::<E>(values.len())?, count: values.len() })
            }
            fn keep(self, tail: &mut &mut [usize]) -> Self::Kept { gather_values(AsRef::<[E]>::as_ref(&self), tail) }
            fn tape(kept: &Self::Kept) -> RawTape<E> { *kept }
        }
    )+};
}

owned_values!([E; N], const N; Vec<E>; Box<[E]>);

// Single paths -----------------------------------------------------------------------------------------------

impl<P: AsRef<Path>> Batch<P, OnePath> for Lend {
    type Kept = P;
    fn measure(input: &P, _: &'static TapeNames) -> Result<Measure> {
        crate::marshal::path_bytes(input.as_ref())?;
        Ok(Measure { words: 0, count: 1 })
    }
    fn keep(input: P, _: &mut &mut [usize]) -> Self::Kept {
        input
    }
    fn tape(kept: &Self::Kept) -> RawTape<u8> {
        values(crate::marshal::path_bytes(kept.as_ref()).unwrap_or(&[]))
    }
}

macro_rules! owned_paths {
    ($($ty:ty),+) => {$(
        impl Accepts<Owned, OnePath> for $ty {
            type Kept = RawTape<u8>;
            fn measure(&self, _: &'static TapeNames) -> Result<Measure> {
                let bytes = crate::marshal::path_bytes(AsRef::<Path>::as_ref(self))?;
                Ok(Measure { words: words_of::<u8>(bytes.len())?, count: 1 })
            }
            fn keep(self, tail: &mut &mut [usize]) -> Self::Kept {
                gather_values(crate::marshal::path_bytes(AsRef::<Path>::as_ref(&self)).unwrap_or(&[]), tail)
            }
            fn tape(kept: &Self::Kept) -> RawTape<u8> { *kept }
        }
    )+};
}

owned_paths!(
    PathBuf,
    String,
    OsString,
    Box<Path>,
    Cow<'static, Path>,
    Arc<Path>,
    &'static str,
    &'static Path,
    &'static OsStr
);

/// Checks an edge set against a step's items as the library does: offsets empty or one per item plus one,
/// ascending, the last one the ids' count, and weights empty or one per id (`Status::ShapeMismatch`);
/// every id below the items and never the item itself, every weight finite and positive
/// (`Status::InvalidArgument`).
pub(crate) fn check_edges(
    offsets: &[usize],
    ids: &[usize],
    weights: &[f32],
    items: usize,
) -> Result<()> {
    if offsets.is_empty() {
        if !ids.is_empty() || !weights.is_empty() {
            return Err(mismatch("an edge set has ids but no offsets"));
        }
        return Ok(());
    }
    if offsets.len() != items + 1 {
        return Err(mismatch(
            "an edge set's offsets are not one per item plus one",
        ));
    }
    if offsets.windows(2).any(|pair| pair[0] > pair[1]) {
        return Err(mismatch("an edge set's offsets fall"));
    }
    if offsets[items] != ids.len() {
        return Err(mismatch("an edge set's ids do not match its last offset"));
    }
    if !weights.is_empty() && weights.len() != ids.len() {
        return Err(mismatch(
            "an edge set's weights are neither zero nor one per id",
        ));
    }
    for item in 0..items {
        for &id in &ids[offsets[item]..offsets[item + 1]] {
            if id >= items {
                return Err(invalid("an edge leads outside the step's items"));
            }
            if id == item {
                return Err(invalid("an edge leads to its own item"));
            }
        }
    }
    if weights
        .iter()
        .any(|weight| !weight.is_finite() || *weight <= 0.0)
    {
        return Err(invalid("an edge's weight is not finite and positive"));
    }
    Ok(())
}
