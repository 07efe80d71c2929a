//! Become agents on further channels of a host's one SSH connection: sudo (or su, on a
//! pty: it reads the password from a terminal only) on a new channel, the password (if
//! any) after its prompt, the agent sent along when the become user has none cached (see
//! `connection::privilege`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use russh::ChannelMsg;
use tokio::io::AsyncWrite;

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
    pub(crate) async fn open(
        &self,
        become_: &BecomeSpec,
        shown: crate::connection::ExecShown<'_>,
    ) -> Result<AgentSession, ConnectError> {
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
        let line = privilege::become_command(become_, agent, &prompt);
        shown(&line);
        channel
            .exec(true, line)
            .await
            .map_err(|e| channel_error(spec, &format!("running {}", become_.method.name()), e))?;
        let (mut read, write) = channel.split();
        let mut talk = Negotiation::new(become_, &prompt);
        let seconds = become_.timeout.unwrap_or(spec.connect_timeout).as_secs() + 2;
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
                    let stdin = Arc::new(stdin);
                    let writer: Pin<Box<dyn AsyncWrite + Send>> = if become_.method.needs_pty() {
                        Box::pin(CloseOnShutdown {
                            inner: Box::pin(stdin.make_writer()),
                            half: stdin.clone(),
                            pump: pump.abort_handle(),
                            closing: None,
                        })
                    } else {
                        Box::pin(stdin.make_writer())
                    };
                    return match AgentSession::start(stdout, writer, BootstrapReport::default())
                        .await
                    {
                        Ok(session) => {
                            session.add_end_witness(super::channel_witness(diagnostics));
                            session.add_end_witness(super::connection_witness(&self.connection));
                            session.set_goodbye(super::goodbye(&self.connection));
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

/// The agent's stdin on a pty: a raw terminal has no end of file, so shutting the writer
/// down also closes the channel and ends the agent's output for the session (whose close
/// would otherwise wait its whole timeout for an end that never comes).
struct CloseOnShutdown {
    inner: Pin<Box<dyn AsyncWrite + Send>>,
    half: Arc<russh::ChannelWriteHalf<russh::client::Msg>>,
    /// Ends the agent's output for the session at once: sshd answers the close only once
    /// su and the agent have gone.
    pump: tokio::task::AbortHandle,
    closing: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl AsyncWrite for CloseOnShutdown {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.inner.as_mut().poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.inner.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.closing.is_none() {
            let _ = ready!(this.inner.as_mut().poll_shutdown(cx));
            let half = this.half.clone();
            this.closing = Some(Box::pin(async move {
                let _ = half.close().await;
            }));
        }
        ready!(this.closing.as_mut().expect("set above").as_mut().poll(cx));
        this.pump.abort();
        Poll::Ready(Ok(()))
    }
}
