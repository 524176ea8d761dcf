//! The verbatim test (is a text exactly `JSON.stringify` of its parse?) against its slow
//! twin (parse, stringify, compare), for every mask kernel this CPU has: the same answer
//! on any bytes, and no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_session::internals;

fuzz_target!(|data: &[u8]| {
    let want = internals::is_stringify_form_naive(data);
    assert_eq!(internals::is_stringify_form(data), want, "dispatched kernel");
    for isa in internals::kernels() {
        assert_eq!(internals::is_stringify_form_kernel(isa, data), want, "{isa:?}");
    }
});
