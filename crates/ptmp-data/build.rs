//! Compiles proto/ptmp.proto with protox (pure Rust, no protoc) and prost.
fn main() {
    println!("cargo:rerun-if-changed=proto/ptmp.proto");
    let fds = protox::compile(["ptmp.proto"], ["proto"]).expect("compile proto/ptmp.proto");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate Rust code for ptmp.proto");
}
