pub fn run(_a: &CatArgs) -> crate::common::CliResult { Ok(()) }
#[derive(clap::Args)] pub struct CatArgs {}
