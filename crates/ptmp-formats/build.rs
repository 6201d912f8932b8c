//! Compiles PTMP's TPSet schema (`ptmp-data/proto/ptmp.proto`) into a
//! serialized `FileDescriptorSet`, which every MCAP file embeds so that
//! any MCAP reader can decode its messages.
fn main() {
    let dir = "../ptmp-data/proto";
    println!("cargo:rerun-if-changed={dir}/ptmp.proto");
    let fds = protox::Compiler::new([dir])
        .and_then(|mut c| {
            c.include_imports(true).open_file("ptmp.proto")?;
            Ok(c.encode_file_descriptor_set())
        })
        .expect("compile ../ptmp-data/proto/ptmp.proto");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("ptmp.fds"), fds).expect("write ptmp.fds");
}
