//! TEMPORARY STUB, replaced by the real shell analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub words: Vec<String>,
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque(pub String);
impl std::fmt::Display for Opaque {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
pub fn analyse(_script: &str) -> Result<Vec<SimpleCommand>, Opaque> {
    Err(Opaque("stub".into()))
}
pub fn analyse_argv(_argv: &[String]) -> Result<Vec<SimpleCommand>, Opaque> {
    Err(Opaque("stub".into()))
}
