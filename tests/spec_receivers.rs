//! The README's "Receivers and Deferred Calls": the three receivers, `status`, `.await`, `wait`, scoped
//! waits, drops that wait, panics that resurface, and contention.

mod common;

use std::future::{Future, IntoFuture};
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use common::{Gate, TINY};
use uform::*;

fn texts() -> Vec<String> {
    vec![
        String::from("a cat on a mat"),
        String::from("a dog in the fog"),
    ]
}

/// The embeddings a blocking call on the calling thread answers, copied out of their arena.
fn reference(model: &Model) -> Vec<f32> {
    let mut arena = Arena::new();
    let encoded = model
        .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .unwrap();
    encoded
        .embeddings
        .unwrap()
        .values::<f32>()
        .unwrap()
        .to_vec()
}

/// A config whose handler blocks on `gate`.
fn gated(gate: &std::sync::Arc<Gate>) -> TextEncodeConfig<'static> {
    TextEncodeConfig {
        progress: Some(gate.handler()),
        ..TextEncodeConfig::from(Scalar::F32)
    }
}

/// A config whose handler panics with `message`.
fn panicking(message: &'static str) -> TextEncodeConfig<'static> {
    let handler = Box::leak(Box::new(move |_: usize, _: usize| -> ControlFlow<()> {
        panic!("{message}")
    }));
    TextEncodeConfig {
        progress: Some(handler),
        ..TextEncodeConfig::from(Scalar::F32)
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast_ref::<&str>()
            .map(|message| message.to_string())
            .unwrap_or_default(),
    }
}

#[test]
fn the_readme_snippet_awaits_a_deferred_call() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let expected = reference(&model);

    let encoded = futures::executor::block_on(async {
        let texts = vec![
            String::from("a cat on a mat"),
            String::from("a dog in the fog"),
        ];
        let call = model.deferred(&executor).text_encode(
            texts,
            Outputs::EMBEDDINGS,
            Scalar::F32,
            &mut arena,
        )?;
        if call.status() == Err(Status::Deferred) {
            // other work
        }
        call.await // or: call.wait()
    })?;
    let values = encoded
        .embeddings
        .expect("EMBEDDINGS were asked for")
        .values::<f32>()?;
    assert_eq!(
        values,
        expected.as_slice(),
        "an item's row does not depend on its receiver"
    );
    Ok(())
}

#[test]
fn every_receiver_answers_the_same_rows() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let model = Model::load_ram(TINY)?;
    let expected = reference(&model);
    let mut arena = Arena::new_in(&executor)?;
    let on =
        model
            .on(&executor)
            .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    assert_eq!(on.embeddings.unwrap().values::<f32>()?, expected.as_slice());
    let waited = model
        .deferred(&executor)
        .text_encode(texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?
        .wait()?;
    assert_eq!(
        waited.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );
    Ok(())
}

#[test]
fn status_answers_deferred_until_the_call_is_final() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let gate = Gate::new();
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        gated(&gate),
        &mut arena,
    )?;
    gate.wait_entered();
    assert_eq!(call.status(), Err(Status::Deferred));
    assert_eq!(
        call.status(),
        Err(Status::Deferred),
        "polling never finishes a call"
    );
    gate.open();
    while call.status() == Err(Status::Deferred) {
        std::thread::yield_now();
    }
    assert_eq!(call.status(), Ok(()));
    let encoded = call.wait()?;
    assert_eq!(encoded.embeddings.unwrap().count(), 2);
    Ok(())
}

#[test]
fn a_failed_deferred_call_reports_its_status() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let stop = Box::leak(Box::new(|_: usize, _: usize| -> ControlFlow<()> {
        ControlFlow::Break(())
    }));
    let config = TextEncodeConfig {
        progress: Some(stop),
        ..TextEncodeConfig::from(Scalar::F32)
    };
    let call =
        model
            .deferred(&executor)
            .text_encode(texts(), Outputs::EMBEDDINGS, config, &mut arena)?;
    let error = call.wait().unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
    Ok(())
}

/// A future that is pending once, so `join!` polls the other futures in between.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn other_tasks_run_while_a_call_is_awaited() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let gate = Gate::new();
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        gated(&gate),
        &mut arena,
    )?;
    gate.wait_entered();
    // The call cannot finish until the other task opens the gate, so `.await` must let it run.
    let (encoded, turns) = futures::executor::block_on(async {
        let other = async {
            let mut turns = 0;
            while turns < 3 {
                YieldNow(false).await;
                turns += 1;
            }
            gate.open();
            turns
        };
        futures::future::join(call.into_future(), other).await
    });
    assert_eq!(turns, 3);
    assert_eq!(encoded?.embeddings.unwrap().count(), 2);
    Ok(())
}

#[test]
fn waiting_off_thread_goes_through_a_scoped_thread() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let expected = reference(&model);
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    let encoded = std::thread::scope(|scope| scope.spawn(move || call.wait()).join())
        .expect("the wait panicked")?;
    assert_eq!(
        encoded.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );
    Ok(())
}

#[test]
fn dropping_an_unfinished_call_waits_for_it() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let gate = Gate::new();
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        gated(&gate),
        &mut arena,
    )?;
    gate.wait_entered();
    let opener = common::open_later(&gate, Duration::from_millis(100));
    drop(call);
    assert!(
        gate.is_open() && gate.finished(),
        "the drop returned before the call was final"
    );
    opener.join().unwrap();
    // The executor and the arena are free again: nothing holds them.
    let encoded =
        model
            .on(&executor)
            .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    assert_eq!(encoded.embeddings.unwrap().count(), 2);
    Ok(())
}

#[test]
fn a_local_executor_holds_a_deferred_call_until_drained() -> uform::Result<()> {
    let local = Executor::default(); // owns nothing, runs on the calling thread
    let mut arena = Arena::new_in(&local)?;
    let model = Model::load_ram(TINY)?;
    let expected = reference(&model);
    let call = model.deferred(&local).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(
        call.status(),
        Err(Status::Deferred),
        "status alone never runs a held call"
    );
    local.drain(Mood::Spinning)?; // drain it before an `.await` there
    assert_eq!(call.status(), Ok(()));
    let encoded = futures::executor::block_on(call.into_future())?;
    assert_eq!(
        encoded.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );

    // `wait` runs a held call on the calling thread.
    let call = model.deferred(&local).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(call.status(), Err(Status::Deferred));
    assert_eq!(
        call.wait()?.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );
    Ok(())
}

#[test]
fn a_busy_executor_refuses_blocking_and_deferred_calls() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let mut other = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let gate = Gate::new();
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        gated(&gate),
        &mut arena,
    )?;
    gate.wait_entered();

    let blocking =
        model
            .on(&executor)
            .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut other);
    assert_eq!(blocking.unwrap_err().status, Status::Contended);
    let deferred = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut other,
    );
    assert_eq!(deferred.unwrap_err().status, Status::Contended);
    // The calling thread needs no executor, so `&Model` still runs.
    assert!(model
        .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut other)
        .is_ok());

    gate.open();
    assert_eq!(call.wait()?.embeddings.unwrap().count(), 2);
    assert!(model
        .on(&executor)
        .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut other)
        .is_ok());
    Ok(())
}

#[test]
fn a_leaked_call_leaves_its_arena_safe_and_busy() -> uform::Result<()> {
    let first = Executor::for_ram(&[], None, 1)?;
    let second = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new();
    let model = Model::load_ram(TINY)?;
    let gate = Gate::new();
    let call = model.deferred(&first).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        gated(&gate),
        &mut arena,
    )?;
    gate.wait_entered();
    std::mem::forget(call); // ends the borrow of the arena while the call still writes into it

    // The README's Errors snippet, where the arena serves the leaked call.
    let texts = texts();
    let mut branch = "";
    match model
        .on(&second)
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
        }) => {
            println!("the arena serves another call");
            branch = "contended";
        }
        Err(error) => println!("{}: {}", error.status, error.message),
    }
    assert_eq!(branch, "contended");

    let opener = common::open_later(&gate, Duration::from_millis(50));
    drop(arena); // waits for the leaked call writing into it
    assert!(
        gate.finished(),
        "dropping the arena returned before the call writing into it was final"
    );
    opener.join().unwrap();
    Ok(())
}

#[test]
fn a_handler_panic_resurfaces_from_wait() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        panicking("boom in wait"),
        &mut arena,
    )?;
    let payload =
        panic::catch_unwind(AssertUnwindSafe(|| call.wait())).expect_err("the panic resurfaces");
    assert_eq!(panic_message(payload), "boom in wait");
    // The call published nothing and let go of the executor and the arena.
    assert!(model
        .on(&executor)
        .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .is_ok());
    Ok(())
}

#[test]
fn a_handler_panic_resurfaces_from_await() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        panicking("boom in await"),
        &mut arena,
    )?;
    let payload = panic::catch_unwind(AssertUnwindSafe(|| {
        futures::executor::block_on(async { call.await })
    }))
    .expect_err("the panic resurfaces");
    assert_eq!(panic_message(payload), "boom in await");
    Ok(())
}

#[test]
fn a_handler_panic_resurfaces_from_drop() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let call = model.deferred(&executor).text_encode(
        texts(),
        Outputs::EMBEDDINGS,
        panicking("boom in drop"),
        &mut arena,
    )?;
    let payload =
        panic::catch_unwind(AssertUnwindSafe(|| drop(call))).expect_err("the panic resurfaces");
    assert_eq!(panic_message(payload), "boom in drop");
    Ok(())
}

#[test]
fn a_handler_panic_resurfaces_from_a_blocking_call() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram(TINY)?;
    let mut handler = |_: usize, _: usize| -> ControlFlow<()> { panic!("boom while blocking") };
    let config = TextEncodeConfig {
        progress: Some(&mut handler),
        ..TextEncodeConfig::from(Scalar::F32)
    };
    let payload = panic::catch_unwind(AssertUnwindSafe(|| {
        let _ = model
            .on(&executor)
            .text_encode(&texts(), Outputs::EMBEDDINGS, config, &mut arena);
    }))
    .expect_err("the panic resurfaces");
    assert_eq!(panic_message(payload), "boom while blocking");
    assert!(model
        .on(&executor)
        .text_encode(&texts(), Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
        .is_ok());
    Ok(())
}

#[test]
fn deferred_receivers_take_owned_inputs() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let model = Model::load_ram(TINY)?;
    let expected = reference(&model);
    let mut arena = Arena::new_in(&executor)?;
    // Items in an array of 'static values.
    let call = model.deferred(&executor).text_encode(
        ["a cat on a mat", "a dog in the fog"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(
        call.wait()?.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );
    // A tape as `(Vec<_>, Vec<usize>)`.
    let tape = (
        b"a cat on a mata dog in the fog".to_vec(),
        vec![0usize, 14, 30],
    );
    let call = model.deferred(&executor).text_encode(
        tape,
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(
        call.wait()?.embeddings.unwrap().values::<f32>()?,
        expected.as_slice()
    );
    // A tape the binding refuses never reaches the library.
    let tape = (b"short".to_vec(), vec![0usize, 9]);
    let refused =
        model
            .deferred(&executor)
            .text_encode(tape, Outputs::EMBEDDINGS, Scalar::F32, &mut arena);
    assert_eq!(refused.unwrap_err().status, Status::ShapeMismatch);
    Ok(())
}

#[test]
fn receivers_and_deferred_calls_are_send() {
    fn send<T: Send>() {}
    send::<Deferred<'static, Encoded<'static>>>();
    send::<Executor>();
    send::<Arena>();
    fn shared<T: Send + Sync>() {}
    shared::<Model>();
}
