//! Views of what a call wrote into an arena: [`Rows`], [`RowsTape`], [`Tape`] and the [`Encoded`] surfaces.
//!
//! A view borrows the arena the call wrote into (`&mut Arena` for the call, then the view's lifetime), so
//! the arena's next call, which rewinds it, cannot run while a view is alive: the borrow checker retires
//! stale views at compile time. Views of VRAM arenas hold device memory, which the host accessors refuse
//! with [`Status::Device`], while `as_ptr` still hands them to another library.

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;
use core::mem::size_of;

use crate::error::{invalid, mismatch, unknown};
use crate::{sys, Error, Residency, Result, Scalar, Status};

/// The refusal of host accessors on device memory.
const DEVICE: Error = Error::new(
    Status::Device,
    "the rows live in device memory, which the host cannot read",
);

/// A value type `Rows::values` reads rows as: `f32` for [`Scalar::F32`], `i8` for [`Scalar::I8`], `u8` for
/// the packed sign bits of [`Scalar::B1`].
pub trait Value: Copy + sealed::Sealed + 'static {
    /// The scalar rows must hold to be read as `Self`.
    const SCALAR: Scalar;
}
impl Value for f32 {
    const SCALAR: Scalar = Scalar::F32;
}
impl Value for i8 {
    const SCALAR: Scalar = Scalar::I8;
}
impl Value for u8 {
    const SCALAR: Scalar = Scalar::B1;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
}

fn scalar(raw: sys::uform_scalar_t) -> Result<Scalar> {
    Scalar::from_raw(raw).ok_or(unknown(
        "the library answered a scalar this binding does not know",
    ))
}

fn residency(raw: sys::uform_residency_t) -> Result<Residency> {
    Residency::from_raw(raw).ok_or(unknown(
        "the library answered a residency this binding does not know",
    ))
}

/// `count` rows of `columns` values of `scalar`, `stride` bytes apart, in an arena: one row per item, or
/// one item's rows of a [`RowsTape`]. Copying a view copies no rows.
///
/// Mirrors `uform_rows_t`.
#[doc(alias = "uform_rows_t")]
#[derive(Clone, Copy)]
pub struct Rows<'a> {
    data: *const u8,
    count: usize,
    columns: usize,
    stride: usize,
    scalar: Scalar,
    residency: Residency,
    device: usize,
    _arena: PhantomData<&'a [u8]>,
}

// SAFETY: a view reads immutable memory of an arena the borrow checker keeps alive and unchanged.
unsafe impl Send for Rows<'_> {}
// SAFETY: as above.
unsafe impl Sync for Rows<'_> {}

impl<'a> Rows<'a> {
    /// The view of rows of one per item; `None` for a surface not computed (`data == NULL`).
    pub(crate) fn from_raw(raw: &sys::uform_rows_t) -> Result<Option<Self>> {
        if raw.data.is_null() {
            return Ok(None);
        }
        Ok(Some(Self {
            data: raw.data.cast_const().cast(),
            count: raw.count,
            columns: raw.columns,
            stride: raw.stride,
            scalar: scalar(raw.scalar)?,
            residency: residency(raw.residency)?,
            device: raw.device,
            _arena: PhantomData,
        }))
    }

    /// Rows in the view.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Values per row.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Bytes between the starts of consecutive rows.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The type of the values.
    pub fn scalar(&self) -> Scalar {
        self.scalar
    }

    /// Where the rows live.
    pub fn residency(&self) -> Residency {
        self.residency
    }

    /// The device ordinal of VRAM rows, zero for RAM rows.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The first row, in host or device memory, for handing the rows to another library (such as a USearch
    /// VRAM index); valid while the view is.
    pub fn as_ptr(&self) -> *const c_void {
        self.data.cast()
    }

    /// Bytes one row's values take (`uform_scalar_bytes`).
    fn row_bytes(&self) -> usize {
        self.scalar.bytes(self.columns)
    }

    /// The rows' bytes, `stride` apart, without copying; fails with [`Status::Device`] for VRAM rows.
    pub fn as_bytes(&self) -> Result<&'a [u8]> {
        if self.residency != Residency::Ram {
            return Err(DEVICE);
        }
        if self.count == 0 {
            return Ok(&[]);
        }
        let length = (self.count - 1) * self.stride + self.row_bytes();
        // SAFETY: the library published `count` rows `stride` apart in host memory the arena keeps alive.
        Ok(unsafe { core::slice::from_raw_parts(self.data, length) })
    }

    /// The rows' values, `count × columns` of them (packed bytes per row for `u8` and [`Scalar::B1`]),
    /// without copying.
    ///
    /// Refused with [`Status::InvalidArgument`] when the rows hold another scalar than `T` reads (such as
    /// `values::<f32>()` of BF16 rows, which [`as_bytes`](Rows::as_bytes) reads), with
    /// [`Status::ShapeMismatch`] when rows are padded apart, and with [`Status::Device`] for VRAM rows.
    pub fn values<T: Value>(&self) -> Result<&'a [T]> {
        if self.residency != Residency::Ram {
            return Err(DEVICE);
        }
        if self.scalar != T::SCALAR {
            return Err(invalid(
                "the rows hold another scalar type than the one asked for; read them as bytes",
            ));
        }
        let row_bytes = self.row_bytes();
        if self.count > 1 && self.stride != row_bytes {
            return Err(mismatch(
                "the rows are padded apart, so their values are not one slice; read them as bytes",
            ));
        }
        if self.count == 0 {
            return Ok(&[]);
        }
        if self.data.align_offset(core::mem::align_of::<T>()) != 0 {
            return Err(unknown("the library published misaligned rows"));
        }
        let values = self.count * row_bytes / size_of::<T>();
        // SAFETY: the rows are contiguous values of `T` in host memory, aligned, which the arena keeps alive.
        Ok(unsafe { core::slice::from_raw_parts(self.data.cast::<T>(), values) })
    }
}

impl fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rows")
            .field("count", &self.count)
            .field("columns", &self.columns)
            .field("stride", &self.stride)
            .field("scalar", &self.scalar)
            .field("residency", &self.residency)
            .field("device", &self.device)
            .finish()
    }
}

/// Rows bounded per item: item `i` spans rows `offsets[i]` up to `offsets[i + 1]`, such as the per-token
/// states of each input. Dereferences to the [`Rows`] of all items.
///
/// Mirrors `uform_rows_t` with offsets.
#[doc(alias = "uform_rows_t")]
#[derive(Clone, Copy)]
pub struct RowsTape<'a> {
    rows: Rows<'a>,
    offsets: *const usize,
    items: usize,
}

// SAFETY: as for `Rows`.
unsafe impl Send for RowsTape<'_> {}
// SAFETY: as for `Rows`.
unsafe impl Sync for RowsTape<'_> {}

impl<'a> RowsTape<'a> {
    /// The view of a rows tape; `None` for a surface not computed.
    pub(crate) fn from_raw(raw: &sys::uform_rows_t) -> Result<Option<Self>> {
        let Some(rows) = Rows::from_raw(raw)? else {
            return Ok(None);
        };
        if raw.offsets.is_null() {
            return Err(unknown("the library published a rows tape without offsets"));
        }
        Ok(Some(Self {
            rows,
            offsets: raw.offsets,
            items: raw.items,
        }))
    }

    /// The rows of all items.
    pub fn rows(&self) -> Rows<'a> {
        self.rows
    }

    /// Items the rows belong to.
    pub fn items(&self) -> usize {
        self.items
    }

    /// The offsets as the library published them, in host or device memory.
    pub fn offsets_ptr(&self) -> *const usize {
        self.offsets
    }

    /// The `items + 1` ascending row indices bounding each item: item `i` spans rows `offsets[i]` up to
    /// `offsets[i + 1]`. Fails with [`Status::Device`] for VRAM rows.
    pub fn offsets(&self) -> Result<&'a [usize]> {
        if self.rows.residency != Residency::Ram {
            return Err(DEVICE);
        }
        // SAFETY: the library published `items + 1` offsets in host memory the arena keeps alive.
        Ok(unsafe { core::slice::from_raw_parts(self.offsets, self.items + 1) })
    }

    /// The rows of item `i`; [`Status::InvalidArgument`] past the items, [`Status::Device`] for VRAM rows.
    pub fn item(&self, i: usize) -> Result<Rows<'a>> {
        if i >= self.items {
            return Err(invalid("an item index past the tape's items"));
        }
        let offsets = self.offsets()?;
        let (begin, end) = (offsets[i], offsets[i + 1]);
        if begin > end || end > self.rows.count {
            return Err(unknown("the library published offsets outside its rows"));
        }
        Ok(Rows {
            // Not `add`: an empty last item starts past the last row, maybe past the arena's bytes (or in device
            // memory), which its view never reads, since it has no rows.
            data: self.rows.data.wrapping_add(begin * self.rows.stride),
            count: end - begin,
            ..self.rows
        })
    }
}

impl<'a> core::ops::Deref for RowsTape<'a> {
    type Target = Rows<'a>;
    fn deref(&self) -> &Rows<'a> {
        &self.rows
    }
}

impl fmt::Debug for RowsTape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowsTape")
            .field("rows", &self.rows)
            .field("items", &self.items)
            .finish()
    }
}

/// Runs of values per item in an arena: item `i` spans values `offsets[i]` up to `offsets[i + 1]`, such as
/// the probabilities `text_choose` answers, one per choice.
///
/// Mirrors `uform_tape_t`.
#[doc(alias = "uform_tape_t")]
#[derive(Clone, Copy)]
pub struct Tape<'a> {
    data: *const u8,
    offsets: *const usize,
    items: usize,
    scalar: Scalar,
    residency: Residency,
    device: usize,
    _arena: PhantomData<&'a [u8]>,
}

// SAFETY: as for `Rows`.
unsafe impl Send for Tape<'_> {}
// SAFETY: as for `Rows`.
unsafe impl Sync for Tape<'_> {}

impl<'a> Tape<'a> {
    pub(crate) fn from_raw(raw: &sys::uform_tape_t) -> Result<Self> {
        if raw.offsets.is_null() && raw.items != 0 {
            return Err(unknown("the library published a tape without offsets"));
        }
        Ok(Self {
            data: raw.data.cast_const().cast(),
            offsets: raw.offsets,
            items: raw.items,
            scalar: scalar(raw.scalar)?,
            residency: residency(raw.residency)?,
            device: raw.device,
            _arena: PhantomData,
        })
    }

    /// Items in the tape.
    pub fn items(&self) -> usize {
        self.items
    }

    /// The type of the values.
    pub fn scalar(&self) -> Scalar {
        self.scalar
    }

    /// Where the tape lives.
    pub fn residency(&self) -> Residency {
        self.residency
    }

    /// The device ordinal of a VRAM tape, zero for a RAM tape.
    pub fn device(&self) -> usize {
        self.device
    }

    /// The first value, in host or device memory.
    pub fn as_ptr(&self) -> *const c_void {
        self.data.cast()
    }

    /// The `items + 1` ascending value indices bounding each item; [`Status::Device`] for a VRAM tape.
    pub fn offsets(&self) -> Result<&'a [usize]> {
        if self.residency != Residency::Ram {
            return Err(DEVICE);
        }
        if self.offsets.is_null() {
            return Ok(&[0]);
        }
        // SAFETY: the library published `items + 1` offsets in host memory the arena keeps alive.
        Ok(unsafe { core::slice::from_raw_parts(self.offsets, self.items + 1) })
    }

    /// Every value of every item; refused as [`Rows::values`] refuses.
    pub fn values<T: Value>(&self) -> Result<&'a [T]> {
        let offsets = self.offsets()?;
        self.span(0, offsets[self.items])
    }

    /// The values of item `i`, such as the probabilities of its choices; [`Status::InvalidArgument`] past
    /// the items or for another scalar than `f32`, [`Status::Device`] for a VRAM tape.
    pub fn item(&self, i: usize) -> Result<&'a [f32]> {
        if i >= self.items {
            return Err(invalid("an item index past the tape's items"));
        }
        let offsets = self.offsets()?;
        self.span(offsets[i], offsets[i + 1])
    }

    fn span<T: Value>(&self, begin: usize, end: usize) -> Result<&'a [T]> {
        if self.residency != Residency::Ram {
            return Err(DEVICE);
        }
        if self.scalar != T::SCALAR {
            return Err(invalid(
                "the tape holds another scalar type than the one asked for",
            ));
        }
        if begin > end {
            return Err(unknown("the library published falling offsets"));
        }
        if begin == end {
            return Ok(&[]);
        }
        if self.data.align_offset(core::mem::align_of::<T>()) != 0 {
            return Err(unknown("the library published a misaligned tape"));
        }
        // SAFETY: the library published the values the offsets bound, in host memory the arena keeps alive.
        Ok(unsafe { core::slice::from_raw_parts(self.data.cast::<T>().add(begin), end - begin) })
    }
}

impl fmt::Debug for Tape<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tape")
            .field("items", &self.items)
            .field("scalar", &self.scalar)
            .field("residency", &self.residency)
            .field("device", &self.device)
            .finish()
    }
}

/// The surfaces an encoding verb answers, each `None` when [`Outputs`](crate::Outputs) left it out.
///
/// Mirrors `uform_encoded_t`.
#[doc(alias = "uform_encoded_t")]
#[derive(Clone, Copy, Debug)]
pub struct Encoded<'a> {
    /// One unit row of `dimensions` columns per item; an empty item's row is zero.
    pub embeddings: Option<Rows<'a>>,
    /// A rows tape of `hidden` columns, one row per token of each item.
    pub states: Option<RowsTape<'a>>,
    /// A rows tape of `token_width` unit columns, one row per state.
    pub token_vectors: Option<RowsTape<'a>>,
}

impl Encoded<'_> {
    pub(crate) fn from_raw(raw: &sys::uform_encoded_t) -> Result<Self> {
        Ok(Self {
            embeddings: Rows::from_raw(&raw.embeddings)?,
            states: RowsTape::from_raw(&raw.states)?,
            token_vectors: RowsTape::from_raw(&raw.token_vectors)?,
        })
    }
}

impl Scalar {
    /// Bytes taken by `columns` values of this scalar, rounded up to whole bytes for [`Scalar::B1`]; zero for
    /// [`Scalar::Auto`].
    ///
    /// Calls `uform_scalar_bytes`.
    #[doc(alias = "uform_scalar_bytes")]
    pub fn bytes(self, columns: usize) -> usize {
        // SAFETY: `uform_scalar_bytes` takes two values and reads no memory.
        unsafe { sys::uform_scalar_bytes(self.to_raw(), columns) }
    }
}
