//! A bed that is not built is an error that names the build command.

use kube_testbed::{Layout, Testbed};

#[tokio::test]
async fn a_missing_bed_names_the_build_command() {
    let missing = std::env::temp_dir().join("kube-testbed-never-built");
    let error = Testbed::builder()
        .layout(Layout::new(&missing))
        .start()
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("bash testbed/build.sh"), "{message}");
    assert!(
        message.contains(&missing.join("bin").join("etcd").display().to_string()),
        "{message}"
    );
}
