//! Gives the cdylib the soname of the real driver, so that a binary linked
//! against it records `NEEDED libcuda.so.1` and the dynamic loader resolves it
//! through `LD_LIBRARY_PATH` exactly as it would resolve NVIDIA's library.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
