//! The README's "Encoding": every verb, batches and tapes, `Outputs`, configs, handlers, `Rows`,
//! `RowsTape`, `Tape`, and `text_choose`.

mod common;

use std::ops::ControlFlow;

use common::TINY;
use uform::*;

fn setup() -> uform::Result<(Model, Arena)> {
    Ok((Model::load_ram(TINY)?, Arena::new()))
}

#[test]
fn the_readme_tape_snippet_answers_states_per_item() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let tape = (b"first documentthe second".as_slice(), [0usize, 14, 24]);
    let encoded = model.text_encode(tape, Outputs::STATES, Scalar::BF16, &mut arena)?;
    assert!(
        encoded.embeddings.is_none() && encoded.token_vectors.is_none(),
        "surfaces left out answer None"
    );
    let states = encoded.states.expect("STATES were asked for");
    let offsets = states.offsets()?; // item `i` spans rows `offsets[i]` up to `offsets[i + 1]`
    let second = states.item(1)?; // the rows of one item, as `Rows`

    assert_eq!(offsets, &[0, 14, 24], "a byte per token");
    assert_eq!(states.items(), 2);
    assert_eq!(
        (states.count(), states.columns(), states.scalar()),
        (24, common::HIDDEN, Scalar::BF16)
    );
    assert_eq!(
        (second.count(), second.columns(), second.scalar()),
        (10, common::HIDDEN, Scalar::BF16)
    );
    assert_eq!(states.stride(), Scalar::BF16.bytes(common::HIDDEN));
    assert_eq!(states.as_bytes()?.len(), 24 * common::HIDDEN * 2);
    assert_eq!(
        second.as_bytes()?,
        &states.as_bytes()?[14 * states.stride()..],
        "item 1 is the tail of the rows"
    );
    // BF16 rows read as bytes; `values::<f32>()` refuses another scalar type.
    assert_eq!(
        states.values::<f32>().unwrap_err().status,
        Status::InvalidArgument
    );
    assert_eq!(
        second.values::<f32>().unwrap_err().status,
        Status::InvalidArgument
    );
    assert_eq!(
        states.item(2).unwrap_err().status,
        Status::InvalidArgument,
        "past the items"
    );
    Ok(())
}

#[test]
fn a_lent_tape_and_gathered_items_answer_the_same_rows() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let mut other = Arena::new();
    let tape = (b"first documentthe second".as_slice(), [0usize, 14, 24]);
    let lent = model.text_encode(tape, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let gathered = model.text_encode(
        &["first document", "the second"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut other,
    )?;
    assert_eq!(
        lent.embeddings.unwrap().values::<f32>()?,
        gathered.embeddings.unwrap().values::<f32>()?
    );
    Ok(())
}

#[test]
fn every_batch_form_is_accepted() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let expected = {
        let encoded = model.text_encode(
            &["alpha", "beta"],
            Outputs::EMBEDDINGS,
            Scalar::F32,
            &mut arena,
        )?;
        encoded.embeddings.unwrap().values::<f32>()?.to_vec()
    };
    let owned = vec![String::from("alpha"), String::from("beta")];
    let bytes: Vec<&[u8]> = vec![b"alpha", b"beta"];
    let byte_vecs = vec![b"alpha".to_vec(), b"beta".to_vec()];
    let slice: &[&str] = &["alpha", "beta"];
    macro_rules! check {
        ($batch:expr) => {{
            let encoded =
                model.text_encode($batch, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
            assert_eq!(
                encoded.embeddings.unwrap().values::<f32>()?,
                expected.as_slice(),
                "{}",
                stringify!($batch)
            );
        }};
    }
    check!(&["alpha", "beta"]);
    check!(["alpha", "beta"]);
    check!(slice);
    check!(&owned);
    check!(owned.as_slice());
    check!(&bytes);
    check!(&byte_vecs);
    check!(owned.clone());
    check!((b"alphabeta".to_vec(), vec![0usize, 5, 9]));
    check!(("alphabeta".as_bytes(), &[0usize, 5, 9][..]));
    Ok(())
}

#[test]
fn offsets_that_fall_or_leave_the_data_are_shape_mismatches() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let falling = (b"abcdef".as_slice(), [0usize, 4, 2, 6]);
    let error = model
        .text_encode(falling, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .unwrap_err();
    assert_eq!(error.status, Status::ShapeMismatch);
    let leaving = (b"abcdef".as_slice(), [0usize, 3, 7]);
    let error = model
        .text_encode(leaving, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .unwrap_err();
    assert_eq!(error.status, Status::ShapeMismatch);
    Ok(())
}

#[test]
fn outputs_join_and_default_to_embeddings() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    assert_eq!(Outputs::default(), Outputs::EMBEDDINGS);
    let all = Outputs::EMBEDDINGS | Outputs::STATES | Outputs::TOKEN_VECTORS;
    let encoded = model.text_encode(&["four", "and five"], all, Scalar::F32, &mut arena)?;
    let embeddings = encoded.embeddings.expect("embeddings");
    let states = encoded.states.expect("states");
    let tokens = encoded.token_vectors.expect("token vectors");
    assert_eq!(
        (embeddings.count(), embeddings.columns()),
        (2, common::DIMENSIONS)
    );
    assert_eq!((states.count(), states.columns()), (12, common::HIDDEN));
    assert_eq!(
        (tokens.count(), tokens.columns()),
        (12, common::TOKEN_WIDTH),
        "one token vector per state"
    );
    assert_eq!(tokens.offsets()?, states.offsets()?);
    for row in tokens.values::<f32>()?.chunks(common::TOKEN_WIDTH) {
        assert!(
            (common::norm(row) - 1.0).abs() < 1e-3,
            "token vectors are unit rows"
        );
    }
    let only_tokens =
        model.text_encode(&["four"], Outputs::TOKEN_VECTORS, Scalar::F32, &mut arena)?;
    assert!(only_tokens.embeddings.is_none() && only_tokens.states.is_none());
    assert_eq!(only_tokens.token_vectors.unwrap().items(), 1);
    Ok(())
}

#[test]
fn rows_do_not_depend_on_the_batch() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let alone = model.text_encode(
        &["the same text"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    let alone = alone.embeddings.unwrap().values::<f32>()?.to_vec();
    let batched = model.text_encode(
        &["before", "the same text", "after"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    let batched = batched.embeddings.unwrap();
    assert_eq!(
        &batched.values::<f32>()?[common::DIMENSIONS..2 * common::DIMENSIONS],
        alone.as_slice()
    );
    Ok(())
}

#[test]
fn every_scalar_lands_as_asked() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let texts = ["packed", "rows"];
    let f32_rows = model.text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let reference = f32_rows.embeddings.unwrap().values::<f32>()?.to_vec();

    let i8_rows = model
        .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::I8, &mut arena)?
        .embeddings
        .unwrap();
    assert_eq!(i8_rows.scalar(), Scalar::I8);
    let values = i8_rows.values::<i8>()?;
    assert_eq!(values.len(), 2 * common::DIMENSIONS);
    for (value, exact) in values.iter().zip(&reference) {
        assert!(
            (f32::from(*value) - 127.0 * exact).abs() <= 1.0,
            "i8 holds round(127 x)"
        );
    }

    let b1_rows = model
        .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::B1, &mut arena)?
        .embeddings
        .unwrap();
    let bits = b1_rows.values::<u8>()?;
    assert_eq!(bits.len(), 2 * common::DIMENSIONS.div_ceil(8));
    for (column, exact) in reference[..common::DIMENSIONS].iter().enumerate() {
        assert_eq!(
            bits[column / 8] >> (column % 8) & 1 == 1,
            *exact > 0.0,
            "b1 holds sign bits, LSB first"
        );
    }

    let bf16 = model
        .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::BF16, &mut arena)?
        .embeddings
        .unwrap();
    assert_eq!(bf16.as_bytes()?.len(), 2 * common::DIMENSIONS * 2);
    assert_eq!(
        bf16.values::<f32>().unwrap_err().status,
        Status::InvalidArgument
    );

    let auto = model
        .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::Auto, &mut arena)?
        .embeddings
        .unwrap();
    assert_eq!(auto.scalar(), Scalar::F32, "auto outputs land as F32");

    let refused = model.text_encode(&texts, Outputs::STATES, Scalar::I8, &mut arena);
    assert_eq!(
        refused.unwrap_err().status,
        Status::InvalidArgument,
        "states are not unit rows"
    );
    Ok(())
}

#[test]
fn the_readme_config_snippet_stops_at_half() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let texts = ["a cat on a mat", "a dog in the fog"];
    let mut stats = TextEncodeStats::default();
    let mut handler = |completed, total| {
        if completed * 2 < total {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    };
    let config = TextEncodeConfig {
        stats: Some(&mut stats),
        progress: Some(&mut handler),
        ..TextEncodeConfig::from(Scalar::F32)
    };
    let encoded = model.text_encode(&texts, Outputs::EMBEDDINGS, config, &mut arena);
    let error = encoded.unwrap_err();
    assert_eq!(
        error.status,
        Status::Cancelled,
        "a handler answering Break stops the call"
    );
    assert_eq!(stats.items, 0, "a cancelled call publishes nothing");
    Ok(())
}

#[test]
fn stats_and_progress_report_a_finished_call() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let texts = ["a cat on a mat", "a dog in the fog", "and a bird"];
    let mut stats = TextEncodeStats::default();
    let mut reports = Vec::new();
    let mut handler = |completed, total| {
        reports.push((completed, total));
        ControlFlow::Continue(())
    };
    let config = TextEncodeConfig {
        stats: Some(&mut stats),
        progress: Some(&mut handler),
        ..TextEncodeConfig::from(Scalar::F32)
    };
    model.text_encode(&texts, Outputs::EMBEDDINGS, config, &mut arena)?;
    assert_eq!(stats.items, 3);
    assert_eq!(
        stats.tokens,
        texts.iter().map(|text| text.len()).sum::<usize>()
    );
    assert_eq!(reports.last(), Some(&(3, 3)));
    assert!(
        reports.windows(2).all(|pair| pair[0].0 < pair[1].0),
        "progress only grows"
    );
    Ok(())
}

#[test]
fn the_readme_choice_snippet_answers_probabilities_summing_to_one() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let config = TextChooseConfig {
        temperature_groups: &[0, 1],
        ..TextChooseConfig::default()
    };
    let probabilities = model.text_choose(
        &["keep this candidate?", "expand which neighbour?"],
        &["yn", "ABCD"],
        config,
        &mut arena,
    )?;
    let expand: &[f32] = probabilities.item(1)?; // the probabilities of 'A' through 'D'

    assert_eq!(expand.len(), 4);
    assert_eq!(probabilities.items(), 2);
    assert_eq!(probabilities.offsets()?, &[0, 2, 6]);
    assert_eq!(probabilities.scalar(), Scalar::F32);
    for item in 0..probabilities.items() {
        let values = probabilities.item(item)?;
        assert!(values.iter().all(|p| (0.0..=1.0).contains(p)));
        assert!(
            (values.iter().sum::<f32>() - 1.0).abs() < 1e-5,
            "item {item} sums to one"
        );
    }
    Ok(())
}

#[test]
fn choices_are_checked() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let groups = [0, common::CHOICE_GROUPS];
    let config = TextChooseConfig {
        temperature_groups: &groups,
        ..TextChooseConfig::default()
    };
    let error = model
        .text_choose(&["a", "b"], &["yn", "yn"], config, &mut arena)
        .unwrap_err();
    assert_eq!(
        error.status,
        Status::InvalidArgument,
        "a group at or past the model's"
    );
    let error = model
        .text_choose(&["a"], &["yy"], TextChooseConfig::default(), &mut arena)
        .unwrap_err();
    assert_eq!(
        error.status,
        Status::InvalidArgument,
        "repeated choice bytes"
    );
    let error = model
        .text_choose(&["a"], &[""], TextChooseConfig::default(), &mut arena)
        .unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "no choice");
    let error = model
        .text_choose(
            &["a", "b"],
            &["yn"],
            TextChooseConfig::default(),
            &mut arena,
        )
        .unwrap_err();
    assert_eq!(
        error.status,
        Status::ShapeMismatch,
        "one choice item per text"
    );
    Ok(())
}

#[test]
fn pixels_encode_per_item_heights_and_widths() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let small = vec![128u8; 8 * 8 * 3];
    let tall = vec![64u8; 16 * 8 * 3];
    let encoded = model.image_encode_pixels(
        &[small.as_slice(), tall.as_slice()],
        &[8, 16],
        &[8, 8],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(encoded.embeddings.unwrap().count(), 2);

    let error = model.image_encode_pixels(
        &[small.as_slice()],
        &[9],
        &[8],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(
        error.unwrap_err().status,
        Status::ShapeMismatch,
        "pixels disagree with the height"
    );
    let error = model.image_encode_pixels(
        &[small.as_slice()],
        &[0],
        &[8],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(
        error.unwrap_err().status,
        Status::InvalidArgument,
        "a zero height"
    );
    let error = model.image_encode_pixels(
        &[small.as_slice()],
        &[8, 8],
        &[8],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(
        error.unwrap_err().status,
        Status::ShapeMismatch,
        "one height per item"
    );
    Ok(())
}

#[test]
fn samples_encode_at_any_rate() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let second = vec![0.25f32; 16_000];
    let half = vec![-0.5f32; 4_000];
    let mut stats = AudioEncodeStats::default();
    let config = AudioEncodeConfig {
        stats: Some(&mut stats),
        ..AudioEncodeConfig::from(Scalar::F32)
    };
    let encoded = model.audio_encode_samples(
        &[second.as_slice(), half.as_slice()],
        16_000,
        Outputs::EMBEDDINGS,
        config,
        &mut arena,
    )?;
    assert_eq!(encoded.embeddings.unwrap().count(), 2);
    assert_eq!(stats.items, 2);
    assert!((stats.seconds - 1.25).abs() < 1e-9);

    let empty: Vec<Vec<f32>> = vec![Vec::new()];
    assert!(model
        .audio_encode_samples(&empty, 16_000, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .is_ok());
    let nan = [f32::NAN];
    let error = model.audio_encode_samples(
        &[nan.as_slice()],
        16_000,
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(
        error.unwrap_err().status,
        Status::InvalidArgument,
        "a NaN sample"
    );
    let error = model.audio_encode_samples(
        &[second.as_slice()],
        0,
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(
        error.unwrap_err().status,
        Status::InvalidArgument,
        "a zero sample rate"
    );
    Ok(())
}

#[test]
#[cfg(feature = "stub")] // the stub reads the files without decoding them; tests/c/media_numerics.c decodes real ones
fn media_files_encode_by_path() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let dir = common::scratch_dir("media");
    let image = dir.join("cat.png");
    let clip = dir.join("clip.mp4");
    let recording = dir.join("voice.wav");
    std::fs::write(&image, vec![7u8; 4096]).unwrap();
    std::fs::write(&clip, vec![9u8; 200_000]).unwrap();
    std::fs::write(&recording, vec![1u8; 44 + 32_000]).unwrap();

    let images = model.image_encode(
        &[image.as_path(), image.as_path()],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    let rows = images.embeddings.unwrap();
    assert_eq!(rows.count(), 2);
    let values = rows.values::<f32>()?;
    assert_eq!(
        values[..common::DIMENSIONS],
        values[common::DIMENSIONS..],
        "the same file, the same row"
    );

    let clips = model.video_encode(&[&clip], Outputs::STATES, Scalar::F32, &mut arena)?;
    assert_eq!(clips.states.unwrap().items(), 1);
    let recordings = model.audio_encode(
        vec![recording.clone()],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(recordings.embeddings.unwrap().count(), 1);

    let missing = dir.join("missing.jpg");
    let error = model
        .image_encode(&[&missing], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .unwrap_err();
    assert_eq!(error.status, Status::NotFound);
    std::fs::remove_dir_all(dir).ok();
    Ok(())
}

#[test]
fn an_empty_batch_answers_empty_rows() -> uform::Result<()> {
    let (model, mut arena) = setup()?;
    let none: [&str; 0] = [];
    let encoded = model.text_encode(&none, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    assert_eq!(encoded.embeddings.map_or(0, |rows| rows.count()), 0);
    let empty_item = model.text_encode(&[""], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let row = empty_item.embeddings.unwrap().values::<f32>()?.to_vec();
    assert!(
        row.iter().all(|value| *value == 0.0),
        "an empty item's row is zero"
    );
    Ok(())
}
