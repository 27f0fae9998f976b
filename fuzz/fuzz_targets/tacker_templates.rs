//! Fuzzes the Tacker readers (`anti-affinity-placement`'s `tacker`): any
//! bytes as a VNFD or as a BaseHOT (the bytes after the first NUL are the
//! nested template every name resolves to) must read or fail with an
//! error, never panic; whatever reads must translate and plan without
//! panicking.
#![no_main]

use anti_affinity_placement::tacker::{base_hot, plan, translate, vnfd};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (top, nested) = match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let (Ok(top), Ok(nested)) = (std::str::from_utf8(top), std::str::from_utf8(nested)) else {
        return;
    };
    let mut loader = |_: &str| -> vnfd::LoadResult { Ok(Some(nested.to_owned())) };
    let hosts = [plan::ComputeHost {
        name: "compute-a".to_owned(),
        usable: true,
    }];
    let hot = base_hot::read_base_hot("top.yaml", top, &mut loader);
    if let Ok(vnfd) = vnfd::read_vnfd("top.yaml", top, &mut loader, None) {
        let translation = match &hot {
            Ok(hot) => hot.translation.clone(),
            Err(_) => translate::translate(&vnfd),
        };
        let _ = plan::plan(&vnfd, &translation, &hosts, &[], None);
    }
});
