//! The README's "Errors": `Error { status, message }`, statuses the binding finds before the call, and
//! the names every enum prints and parses through the C tables.

mod common;

use std::str::FromStr;

use common::TINY;
use uform::*;

#[test]
fn the_readme_snippet_reports_each_outcome() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let texts = ["a cat on a mat", "a dog in the fog"];
    let mut branch = "";
    match model
        .on(&executor)
        .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
    {
        Ok(encoded) => {
            println!(
                "{} items",
                encoded.embeddings.map_or(0, |rows| rows.count())
            );
            branch = "ok";
        }
        Err(Error {
            status: Status::Contended,
            ..
        }) => println!("the arena serves another call"),
        Err(error) => println!("{}: {}", error.status, error.message),
    }
    assert_eq!(branch, "ok");
    // The Contended branch runs in spec_receivers.rs, where a leaked call holds the arena.
    Ok(())
}

#[test]
fn an_error_carries_a_status_and_a_static_message() {
    let error = Model::load_ram("/nonexistent/model.safetensors").unwrap_err();
    assert_eq!(error.status, Status::NotFound);
    let message: &'static str = error.message;
    assert!(!message.is_empty());
    assert_eq!(error.to_string(), format!("not-found: {message}"));
    let boxed: Box<dyn std::error::Error> = Box::new(error);
    assert!(boxed.to_string().starts_with("not-found"));
}

#[test]
fn failures_the_binding_catches_carry_the_library_s_status() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let mut arena = Arena::new();
    let leaving = model.text_encode(
        (b"abc".as_slice(), [0usize, 4]),
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(leaving.unwrap_err().status, Status::ShapeMismatch);
    let pixels = [0u8; 12];
    let heights = model.image_encode_pixels(
        &[pixels.as_slice()],
        &[2, 2],
        &[2],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(heights.unwrap_err().status, Status::ShapeMismatch);
    Ok(())
}

/// Checks that `value` prints as `name` and that `name` parses back to `value`.
fn round_trip<T>(value: T, name: &str)
where
    T: std::fmt::Display + FromStr + PartialEq + std::fmt::Debug,
    T::Err: std::fmt::Debug,
{
    assert_eq!(value.to_string(), name);
    assert_eq!(name.parse::<T>().unwrap(), value);
}

#[test]
fn enums_print_and_parse_the_c_names() {
    round_trip(Status::ShapeMismatch, "shape-mismatch");
    round_trip(Status::Deferred, "deferred");
    round_trip(Status::InvalidArgument, "invalid-argument");
    round_trip(Status::LimitExceeded, "limit-exceeded");
    round_trip(CPUClass::IntelHaswell, "intel-haswell");
    round_trip(CPUClass::IntelSapphireRapids, "intel-sapphire-rapids");
    round_trip(CPUClass::Serial, "serial");
    round_trip(GPUClass::NvidiaHopper, "nvidia-hopper");
    round_trip(Scalar::BF16, "bf16");
    round_trip(Scalar::E4M3, "e4m3");
    round_trip(Mood::Spinning, "spinning");
    round_trip(Modality::Image, "image");
    round_trip(Objective::LateInteraction, "late-interaction");
    round_trip(Negatives::MeshAndHard, "mesh-and-hard");
    round_trip(PairLossForm::InfoNce, "info-nce");
    round_trip(LateInteractionSide::Query, "query");
    round_trip(Residency::Vram, "vram");
}

#[test]
fn unknown_names_do_not_parse() {
    assert!("shape_mismatch".parse::<Status>().is_err());
    assert!(
        "ok".parse::<Status>().is_err(),
        "success is Result's, not a Status"
    );
    assert!("intel-pentium".parse::<CPUClass>().is_err());
    assert!("".parse::<Scalar>().is_err());
    assert!(
        "Spinning".parse::<Mood>().is_err(),
        "names are the C tables', lower-case"
    );
}

#[test]
fn multimem_tiers_print_their_names() {
    assert_eq!(MultimemTier::None.to_string(), "none");
    assert_eq!(MultimemTier::Nvls.to_string(), "nvls");
    assert_eq!(MultimemTier::NvlsTree.to_string(), "nvls-tree");
    assert_eq!(MultimemTier::Collnet.to_string(), "collnet");
}
