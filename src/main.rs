fn main() {
    let agent = turbo_play::agent_binary::agent_binary().expect("agent");
    println!("agent {} bytes, {}", agent.bytes.len(), agent.sha256);
}
