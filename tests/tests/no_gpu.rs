//! Host-only behaviour that needs no GPU: the runtime reports a missing driver or device as a typed
//! error instead of panicking.

use primitives::{Error, Gpu};

#[test]
fn opening_a_gpu_never_panics_and_names_what_is_missing() {
    match Gpu::new() {
        Ok(gpu) => assert!(gpu.properties().multiprocessors > 0),
        Err(error @ (Error::NoDriver | Error::NoDevice(_))) => {
            let message = error.to_string();
            assert!(message.contains("driver") || message.contains("device"), "unclear message: {message}");
        }
        Err(other) => panic!("expected NoDriver or NoDevice, got {other:?}"),
    }
}

#[test]
fn asking_for_a_device_that_does_not_exist_is_an_error() {
    let error = Gpu::with_ordinal(usize::MAX).expect_err("no machine has that many GPUs");
    assert!(matches!(error, Error::NoDriver | Error::NoDevice(_)), "{error:?}");
}
