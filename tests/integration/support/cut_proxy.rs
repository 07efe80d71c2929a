//! A loopback TCP proxy in front of an sshd that a test can break on purpose: `reset` ends
//! every connection through it at once with a TCP reset (a rebooted router, a killed
//! NAT entry), `stall` stops forwarding in both directions without closing anything (a
//! cut cable, a firewall that drops the flow): only keepalives can tell the peer is gone.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct CutProxy {
    /// The port to connect to instead of the sshd's.
    pub port: u16,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    stalled: AtomicBool,
    stopped: AtomicBool,
    /// Bumped by each reset: the connections of an earlier generation end.
    generation: AtomicU64,
    /// Both sockets of every connection accepted so far.
    sockets: Mutex<Vec<TcpStream>>,
    /// Bytes forwarded, both directions together.
    forwarded: AtomicU64,
}

/// How often a forwarding thread looks at the flags while no data comes.
const POLL: Duration = Duration::from_millis(50);

impl CutProxy {
    /// Listens on 127.0.0.1 and forwards each connection to 127.0.0.1:`target`.
    pub fn start(target: u16) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let state = Arc::new(State::default());
        let shared = state.clone();
        std::thread::spawn(move || {
            while !shared.stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                            continue;
                        };
                        forward(&shared, client, server);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
                    Err(_) => break,
                }
            }
        });
        CutProxy { port, state }
    }

    /// Ends every connection through the proxy with a TCP reset, on both sides.
    pub fn reset(&self) {
        let sockets: Vec<TcpStream> = self
            .state
            .sockets
            .lock()
            .expect("sockets lock")
            .drain(..)
            .collect();
        for socket in &sockets {
            if let Ok(copy) = socket.try_clone() {
                // SO_LINGER 0: the last close of the socket sends RST instead of FIN.
                let socket = tokio::net::TcpSocket::from_std_stream(copy);
                let _ = socket.set_zero_linger();
            }
        }
        // The forwarding threads drop their copies when they see the new generation.
        self.state.generation.fetch_add(1, Ordering::SeqCst);
        drop(sockets);
    }

    /// Bytes forwarded so far, both directions: what crossed the wire.
    pub fn bytes(&self) -> u64 {
        self.state.forwarded.load(Ordering::SeqCst)
    }

    /// Stops forwarding: bytes already sent stay in the sockets' buffers, nothing more
    /// moves either way, and nothing is closed.
    pub fn stall(&self) {
        self.state.stalled.store(true, Ordering::SeqCst);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        for socket in self.state.sockets.lock().expect("sockets lock").drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
    }
}

fn forward(state: &Arc<State>, client: TcpStream, server: TcpStream) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    {
        let mut sockets = state.sockets.lock().expect("sockets lock");
        sockets.push(client.try_clone().expect("clone socket"));
        sockets.push(server.try_clone().expect("clone socket"));
    }
    let generation = state.generation.load(Ordering::SeqCst);
    for (from, to) in [
        (
            client.try_clone().expect("clone"),
            server.try_clone().expect("clone"),
        ),
        (server, client),
    ] {
        let state = state.clone();
        std::thread::spawn(move || pump(&state, generation, from, to));
    }
}

/// Copies `from` to `to` until either ends or the proxy stops; while stalled it reads
/// nothing, so the sender's buffers fill and it hears nothing back.
fn pump(state: &State, generation: u64, mut from: TcpStream, mut to: TcpStream) {
    let _ = from.set_read_timeout(Some(POLL));
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        if state.stopped.load(Ordering::SeqCst)
            || state.generation.load(Ordering::SeqCst) != generation
        {
            return;
        }
        if state.stalled.load(Ordering::SeqCst) {
            std::thread::sleep(POLL);
            continue;
        }
        match from.read(&mut buffer) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                state.forwarded.fetch_add(n as u64, Ordering::SeqCst);
                if to.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}
