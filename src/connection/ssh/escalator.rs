//! Become agents on further channels of a host's one SSH connection: sudo (or su, on a
//! pty: it reads the password from a terminal only) on a new channel, the password (if
//! any) after its prompt, the agent sent along when the become user has none cached (see
//! `connection::privilege`).

use std::sync::Arc;
use std::time::Duration;

use russh::ChannelMsg;

use super::super::privilege::{self, BecomeSpec, Negotiation, Step};
use super::{
    Connection, Diagnostics, PumpGuard, RunningAgent, channel_error, compressed_agent, start_pump,
};
use crate::agent_session::{AgentSession, BootstrapReport};
use crate::connection::{ConnectError, ConnectionSpec, agent_for};

/// Opens become agents on further channels of the host's one connection.
pub struct Escalator {
    pub(super) connection: Arc<Connection>,
    pub(super) spec: ConnectionSpec,
}

impl Escalator {
    /// An agent running as the become user: sudo on a new channel, the password (if any)
    /// after its prompt, the agent sent along when that user has none cached.
    pub(crate) async fn open(&self, become_: &BecomeSpec) -> Result<AgentSession, ConnectError> {
        let spec = &self.spec;
        let agent = agent_for(&spec.host)?;
        let prompt = privilege::unique_prompt();
        let channel = self
            .connection
            .handle()
            .channel_open_session()
            .await
            .map_err(|e| channel_error(spec, "opening a channel for become", e))?;
        if become_.method.needs_pty() {
            // No echo from the start: the become script makes the terminal raw once su lets
            // it run, and nothing typed before that is ever shown back.
            channel
                .request_pty(false, "dumb", 80, 24, 0, 0, &[(russh::Pty::ECHO, 0)])
                .await
                .map_err(|e| channel_error(spec, "asking for a terminal for su", e))?;
        }
        channel
            .exec(true, privilege::become_command(become_, agent, &prompt))
            .await
            .map_err(|e| channel_error(spec, &format!("running {}", become_.method.name()), e))?;
        let (mut read, write) = channel.split();
        let mut talk = Negotiation::new(become_, &prompt);
        let seconds = spec.connect_timeout.as_secs() + 2;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
        let failed = |message: String| ConnectError::Become(message);
        loop {
            let msg = match tokio::time::timeout_at(deadline, read.wait()).await {
                Ok(msg) => msg,
                Err(_) => return Err(ConnectError::BecomeTimeout(talk.timed_out(seconds))),
            };
            let step = match msg {
                Some(ChannelMsg::Data { data }) => talk.on_stdout(&data),
                Some(ChannelMsg::ExtendedData { data, .. }) => talk.on_stderr(&data),
                Some(ChannelMsg::Eof | ChannelMsg::Close) | None => talk.on_end(),
                Some(_) => Step::Wait,
            };
            match step {
                Step::Wait => {}
                Step::SendPassword => {
                    let mut line = become_.password.clone().unwrap_or_default().into_bytes();
                    line.push(b'\n');
                    write
                        .data(&line[..])
                        .await
                        .map_err(|e| channel_error(spec, "answering the password prompt", e))?;
                }
                Step::SendAgent { gzip } => {
                    let bytes: &[u8] = if gzip {
                        compressed_agent(agent)
                    } else {
                        &agent.bytes
                    };
                    write
                        .data(bytes)
                        .await
                        .map_err(|e| channel_error(spec, "sending the agent for become", e))?;
                }
                Step::Fail(message) => return Err(failed(message)),
                Step::Run(leftover) => {
                    let RunningAgent {
                        stdout,
                        stdin,
                        diagnostics,
                        pump,
                    } = start_pump(read, write, leftover, Diagnostics::default());
                    let writer = stdin.make_writer();
                    return match AgentSession::start(stdout, writer, BootstrapReport::default())
                        .await
                    {
                        Ok(session) => {
                            session.keep_alive(Box::new(PumpGuard(pump)));
                            session.keep_alive(Box::new(stdin));
                            session.keep_alive(Box::new(self.connection.clone()));
                            Ok(session)
                        }
                        Err(e) => {
                            let detail = diagnostics.lock().expect("diagnostics lock").describe();
                            Err(failed(format!(
                                "the become agent did not start: {e} ({detail})"
                            )))
                        }
                    };
                }
            }
        }
    }
}
