//! turbo-agent: placeholder until the agent lands.
fn main() {}
