//! One TCP connection to one broker: length-prefixed framing, request headers, correlation ids,
//! and a deadline on every request.
//!
//! Requests may be pipelined: each caller registers its correlation id before its frame is
//! queued, a writer task sends frames in order, and a reader task routes each response to its
//! caller. Frames go through a channel so that a caller dropping its future mid-request can
//! never leave half a frame on the wire. Dropping the connection closes the socket, which is
//! what ends the broker-side share sessions bound to it.
//!
//! Every request has a deadline (`request.timeout.ms`, plus the long poll of a ShareFetch). A
//! watchdog task closes the connection when one passes: a broker that silently stopped
//! answering (a partition without RST) must not hold later requests on the same socket, so
//! every request still waiting fails at once and the connection is never used again, as Kafka's
//! `NetworkClient` does (`handleTimedOutRequests`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, trace, warn, Instrument};

use crate::error::EngineError;
use crate::memory::{MemberMemory, MemoryCharge};
use crate::protocol::{response_schema, wire};
use crate::security::{self, Security};

type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// Largest frame [`read_frame`] accepts (a request a test's fake broker reads). Responses have
/// a bound of their own, per request, checked before their body is read.
#[cfg(test)]
const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

/// Largest response to a request other than a ShareFetch: the engine's Metadata names the
/// member's own topics only (a few dozen bytes a partition, so this is several hundred thousand
/// partitions); heartbeats, acknowledgements, coordinator lookups and SASL answers are far
/// smaller. A broker the connector names cannot make the worker hold more for one answer.
pub const RESPONSE_MAX_BYTES: usize = 16 * 1024 * 1024;

/// TCP keepalive on broker sockets: an idle connection (a control or coordinator connection
/// between requests) whose peer vanished is noticed by the kernel after about
/// `KEEPALIVE_IDLE + KEEPALIVE_RETRIES × KEEPALIVE_INTERVAL` (90 s), instead of the system
/// default of over two hours. Requests in flight have their own deadline.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
const KEEPALIVE_RETRIES: u32 = 6;

type Reply = oneshot::Sender<Result<(Bytes, MemoryCharge), EngineError>>;

struct Waiting {
    api_key: ApiKey,
    response_header_version: i16,
    /// The largest response taken; a longer frame closes the connection unread.
    max_response: usize,
    /// The member whose memory the response's bytes are charged to while they are read.
    charge_to: Option<Arc<MemberMemory>>,
    deadline: Instant,
    /// The request's own timeout, for the error message.
    timeout: Duration,
    reply: Reply,
}

#[derive(Default)]
struct PendingTable {
    /// Set once the connection is unusable; later requests fail with this reason.
    closed: Option<String>,
    waiting: HashMap<i32, Waiting>,
    /// When the watchdog wakes next; a request due earlier must wake it.
    armed: Option<Instant>,
}

/// What the connection's tasks share.
struct Wire {
    addr: String,
    pending: Mutex<PendingTable>,
    /// Wakes the watchdog: an earlier deadline was registered.
    deadline_changed: Notify,
    /// Set when the connection is closed; ends the reader and writer, which drops the socket.
    shut: watch::Sender<bool>,
}

impl Wire {
    fn lost(&self, reason: &str) -> EngineError {
        EngineError::ConnectionLost {
            addr: self.addr.clone(),
            reason: reason.to_string(),
        }
    }

    /// Marks the connection unusable, fails every waiting request and closes the socket.
    /// `timed_out` names the request whose deadline passed: it fails with a timeout, the others
    /// as lost.
    fn close(&self, reason: &str, timed_out: Option<i32>) {
        let waiting: Vec<(i32, Waiting)> = {
            let mut p = self.pending.lock().expect("pending table");
            if p.closed.is_none() {
                p.closed = Some(reason.to_string());
            }
            p.waiting.drain().collect()
        };
        for (correlation_id, w) in waiting {
            let error = if Some(correlation_id) == timed_out {
                EngineError::timeout(w.timeout, format!("{:?} to {}", w.api_key, self.addr))
            } else {
                self.lost(reason)
            };
            let _ = w.reply.send(Err(error));
        }
        self.shut.send_replace(true);
    }
}

pub struct Connection {
    addr: String,
    client_id: Option<StrBytes>,
    next_correlation_id: AtomicI32,
    frames: mpsc::UnboundedSender<Bytes>,
    wire: Arc<Wire>,
    request_timeout: Duration,
    /// The largest response to a request sent without a bound of its own
    /// ([`Connection::set_response_max_bytes`]).
    response_max: AtomicUsize,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
    watchdog: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
        self.watchdog.abort();
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Connects a TCP socket to `addr` with the options every broker connection gets: no Nagle
/// delay (requests are small and latency-bound) and TCP keepalive.
pub(crate) async fn tcp_connect(addr: &str) -> Result<TcpStream, EngineError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|source| EngineError::Connect {
            addr: addr.to_string(),
            source,
        })?;
    let _ = stream.set_nodelay(true);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_RETRIES);
    if let Err(e) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
        // Not fatal: request deadlines still bound every request.
        warn!(addr, error = %e, "cannot enable TCP keepalive");
    }
    Ok(stream)
}

impl Connection {
    /// Opens a plaintext TCP connection to `addr` ("host:port"). `timeout` bounds the connect
    /// and is the deadline of every request on the connection.
    pub async fn connect(
        addr: &str,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Connection, EngineError> {
        Self::connect_with(addr, client_id, timeout, &Security::plaintext()).await
    }

    /// Opens a connection to `addr` ("host:port"): TCP, then TLS and SASL as `security` says.
    /// `timeout` bounds the whole setup and is the deadline of every request (Kafka's
    /// `request.timeout.ms`).
    pub async fn connect_with(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        security: &Security,
    ) -> Result<Connection, EngineError> {
        let work = async {
            let conn = Self::open(addr, client_id, timeout, security).await?;
            if let Some(creds) = &security.sasl {
                crate::sasl::authenticate(&conn, creds).await?;
                debug!(addr, mechanism = creds.mechanism.name(), "authenticated");
            }
            Ok(conn)
        };
        tokio::time::timeout(timeout, work)
            .await
            .map_err(|_| EngineError::timeout(timeout, format!("connecting to {addr}")))?
    }

    async fn open(
        addr: &str,
        client_id: &str,
        request_timeout: Duration,
        security: &Security,
    ) -> Result<Connection, EngineError> {
        let stream = tcp_connect(addr).await?;
        let (read_half, write_half): (ReadHalf, WriteHalf) = match &security.tls {
            None => {
                let (r, w) = stream.into_split();
                (Box::new(r), Box::new(w))
            }
            Some(tls) => {
                let connector = tokio_rustls::TlsConnector::from(tls.clone());
                let tls_stream = connector
                    .connect(security::server_name(addr)?, stream)
                    .await
                    // A failed handshake is a trust problem (Java: SslAuthenticationException).
                    .map_err(|e| {
                        EngineError::Authentication(format!(
                            "TLS handshake with {addr} failed: {e}"
                        ))
                    })?;
                let (r, w) = tokio::io::split(tls_stream);
                (Box::new(r), Box::new(w))
            }
        };
        let wire = Arc::new(Wire {
            addr: addr.to_string(),
            pending: Mutex::new(PendingTable::default()),
            deadline_changed: Notify::new(),
            shut: watch::Sender::new(false),
        });
        let (frames, frame_rx) = mpsc::unbounded_channel();
        // In the opener's span, so their log lines carry (and are routed to) its member.
        let reader = tokio::spawn(read_loop(read_half, wire.clone()).in_current_span());
        let writer = tokio::spawn(write_loop(write_half, frame_rx, wire.clone()).in_current_span());
        let watchdog = tokio::spawn(watchdog(wire.clone()).in_current_span());
        debug!(addr, "connected");
        Ok(Connection {
            addr: addr.to_string(),
            client_id: Some(StrBytes::from_string(client_id.to_string())),
            next_correlation_id: AtomicI32::new(1),
            frames,
            wire,
            request_timeout,
            response_max: AtomicUsize::new(RESPONSE_MAX_BYTES),
            reader,
            writer,
            watchdog,
        })
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn is_closed(&self) -> bool {
        self.wire
            .pending
            .lock()
            .expect("pending table")
            .closed
            .is_some()
    }

    /// The deadline of each request on this connection (`request.timeout.ms`).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Closes the connection now: waiting requests fail, the socket is closed.
    pub fn close(&self, reason: &str) {
        self.wire.close(reason, None);
    }

    /// Sends a request encoded by kafka-protocol and decodes its response (only for the
    /// (api, version) pairs `protocol::response_schema` knows).
    pub async fn request<R: Request>(
        &self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, EngineError> {
        let api_key = ApiKey::try_from(R::KEY)
            .map_err(|_| EngineError::Internal(format!("unknown api key {}", R::KEY)))?;
        let mut body = BytesMut::with_capacity(64);
        request
            .encode(&mut body, version)
            .map_err(|e| EngineError::Internal(format!("encoding {api_key:?} v{version}: {e}")))?;
        let response = self.request_raw(api_key, version, &body).await?;
        // Never straight into kafka-protocol: its arrays are sized from unchecked counts.
        response_schema::decode_response(api_key, version, response)
    }

    /// Sends an already encoded request body; returns the response body after its header.
    pub async fn request_raw(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
    ) -> Result<Bytes, EngineError> {
        self.send_raw(api_key, version, body)?.await
    }

    /// Queues a request frame now (so requests leave in call order, which share-session
    /// epochs rely on) and returns a future of the response body after its header. The request
    /// times out after `request.timeout.ms`.
    pub fn send_raw(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
    ) -> Result<ResponseFuture, EngineError> {
        self.send_raw_waiting(api_key, version, body, Duration::ZERO)
    }

    /// [`Connection::send_raw`] for a request the broker may hold for `broker_wait` before it
    /// answers (a long-polling ShareFetch's MaxWaitMs): its deadline is that wait plus
    /// `request.timeout.ms`, as Kafka's client gives a fetch.
    pub fn send_raw_waiting(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
        broker_wait: Duration,
    ) -> Result<ResponseFuture, EngineError> {
        let max_response = self.response_max.load(Ordering::Relaxed);
        self.send_raw_bounded(api_key, version, body, broker_wait, max_response, None)
    }

    /// Bounds the responses to requests sent without a bound of their own (Metadata, the
    /// group's requests, SASL) at `bytes`: `share.response.max.bytes`, for clusters whose
    /// metadata for a member's topics is larger than [`RESPONSE_MAX_BYTES`].
    pub fn set_response_max_bytes(&self, bytes: usize) {
        self.response_max.store(bytes, Ordering::Relaxed);
    }

    /// [`Connection::send_raw_waiting`] whose response may be up to `max_response` bytes (a
    /// ShareFetch's: what its records may take). A longer response closes the connection as
    /// soon as its length arrives, before any of it is read. With `charge_to`, the response's
    /// bytes are charged to that member's memory once its length is known, before they are
    /// read ([`ResponseFuture::charged`] hands the charge over with the body).
    pub(crate) fn send_raw_bounded(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
        broker_wait: Duration,
        max_response: usize,
        charge_to: Option<Arc<MemberMemory>>,
    ) -> Result<ResponseFuture, EngineError> {
        let correlation_id = self.next_correlation_id.fetch_add(1, Ordering::Relaxed);
        let header = RequestHeader::default()
            .with_request_api_key(api_key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(self.client_id.clone());
        let mut frame = BytesMut::with_capacity(64 + body.len());
        frame.put_i32(0); // length, patched below
        header
            .encode(&mut frame, api_key.request_header_version(version))
            .map_err(|e| EngineError::Internal(format!("encoding request header: {e}")))?;
        frame.put_slice(body);
        let length = (frame.len() - 4) as i32;
        frame[0..4].copy_from_slice(&length.to_be_bytes());

        let timeout = self.request_timeout.saturating_add(broker_wait);
        let deadline = Instant::now() + timeout;
        let (reply, response) = oneshot::channel();
        {
            let mut pending = self.wire.pending.lock().expect("pending table");
            if let Some(reason) = &pending.closed {
                return Err(self.wire.lost(reason));
            }
            pending.waiting.insert(
                correlation_id,
                Waiting {
                    api_key,
                    response_header_version: api_key.response_header_version(version),
                    max_response,
                    charge_to,
                    deadline,
                    timeout,
                    reply,
                },
            );
            if pending.armed.is_none_or(|armed| deadline < armed) {
                pending.armed = Some(deadline);
                self.wire.deadline_changed.notify_one();
            }
            trace!(addr = %self.addr, ?api_key, version, correlation_id, bytes = frame.len(), "send");
            // Queued under the table lock so that frame order equals call order.
            if self.frames.send(frame.freeze()).is_err() {
                pending.waiting.remove(&correlation_id);
                return Err(self.wire.lost("writer stopped"));
            }
        }
        Ok(ResponseFuture {
            addr: self.addr.clone(),
            response,
        })
    }
}

/// Closes the connection when a request's deadline passes.
async fn watchdog(wire: Arc<Wire>) {
    loop {
        let next = {
            let mut p = wire.pending.lock().expect("pending table");
            if p.closed.is_some() {
                return;
            }
            let next = p.waiting.values().map(|w| w.deadline).min();
            p.armed = next;
            next
        };
        let Some(next) = next else {
            wire.deadline_changed.notified().await;
            continue;
        };
        tokio::select! {
            _ = wire.deadline_changed.notified() => continue,
            _ = tokio::time::sleep_until(next) => {}
        }
        let now = Instant::now();
        let expired = {
            let p = wire.pending.lock().expect("pending table");
            p.waiting
                .iter()
                .filter(|(_, w)| w.deadline <= now)
                .min_by_key(|(_, w)| w.deadline)
                .map(|(id, w)| (*id, w.api_key, w.timeout))
        };
        if let Some((correlation_id, api_key, timeout)) = expired {
            warn!(addr = %wire.addr, ?api_key, correlation_id, ?timeout,
                  "request timed out; closing the connection");
            wire.close(
                &format!("{api_key:?} request timed out after {timeout:?}"),
                Some(correlation_id),
            );
            return;
        }
    }
}

async fn write_loop(
    mut socket: WriteHalf,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    wire: Arc<Wire>,
) {
    let mut shut = wire.shut.subscribe();
    loop {
        let frame = tokio::select! {
            _ = shut.wait_for(|s| *s) => return,
            frame = frames.recv() => match frame {
                Some(frame) => frame,
                None => return,
            },
        };
        // TLS buffers records inside the session: flush so that each frame leaves now.
        let written = tokio::select! {
            // A write blocked on a peer that stopped reading ends with the connection.
            _ = shut.wait_for(|s| *s) => return,
            r = async {
                socket.write_all(&frame).await?;
                socket.flush().await
            } => r,
        };
        if let Err(e) = written {
            debug!(addr = %wire.addr, error = %e, "write failed");
            wire.close(&format!("write failed: {e}"), None);
            return;
        }
    }
}

/// Bytes reserved for a frame before any of its body arrived; beyond this, memory grows with
/// the data actually received, so a lying length field cannot reserve much.
pub(crate) const FRAME_PREALLOCATION: usize = 8 * 1024 * 1024;

/// Reads one length-prefixed frame (without its length), as a test's fake broker reads a
/// request. `Ok(None)`: the stream ended cleanly before a new frame.
#[cfg(test)]
pub(crate) async fn read_frame<R: AsyncRead + Unpin>(
    socket: &mut R,
) -> Result<Option<BytesMut>, String> {
    let length = match socket.read_i32().await {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("read failed: {e}")),
    };
    if length < 4 || length as usize > MAX_FRAME_BYTES {
        return Err(format!("bad frame length {length}"));
    }
    let length = length as usize;
    let mut frame = BytesMut::with_capacity(length.min(FRAME_PREALLOCATION));
    read_rest(socket, &mut frame, length).await?;
    Ok(Some(frame))
}

/// Reads a frame's bytes into `frame` until it holds `length` of them.
async fn read_rest<R: AsyncRead + Unpin>(
    socket: &mut R,
    frame: &mut BytesMut,
    length: usize,
) -> Result<(), String> {
    while frame.len() < length {
        let missing = length - frame.len();
        if frame.len() == frame.capacity() {
            // At most double what has arrived, never past the frame's end.
            frame.reserve(missing.min(frame.len()));
        }
        let n = (&mut *socket)
            .take(missing as u64)
            .read_buf(&mut *frame)
            .await
            .map_err(|e| format!("read failed: {e}"))?;
        if n == 0 {
            return Err(format!(
                "closed by broker inside a frame ({} of {length} bytes)",
                frame.len()
            ));
        }
    }
    Ok(())
}

/// What a response frame may be, by the request waiting for it.
pub(crate) struct FrameBound {
    /// The largest frame taken.
    pub max: usize,
    /// The request's name, for messages (none: no request waits for it).
    pub api_key: Option<ApiKey>,
    /// The member whose memory the frame is charged to while it is read.
    pub charge_to: Option<Arc<MemberMemory>>,
}

impl FrameBound {
    /// The bound of a frame no member pays for.
    pub fn uncharged(max: usize, api_key: Option<ApiKey>) -> FrameBound {
        FrameBound {
            max,
            api_key,
            charge_to: None,
        }
    }
}

/// Reads one response frame (without its length), its correlation id first: `bound` gives the
/// largest response the request with that id takes (and the request's name), and a longer frame
/// is an error before any more of it is read or reserved. A frame within its bound is charged
/// to the bound's member (if any) before the rest of it is read: the returned charge holds its
/// bytes. `Ok(None)`: the stream ended cleanly before a new frame.
pub(crate) async fn read_response<R: AsyncRead + Unpin>(
    socket: &mut R,
    bound: impl Fn(i32) -> FrameBound,
) -> Result<Option<(BytesMut, MemoryCharge)>, String> {
    let length = match socket.read_i32().await {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(format!("read failed: {e}")),
    };
    if length < 4 {
        return Err(format!("bad frame length {length}"));
    }
    let length = length as usize;
    let correlation_id = socket
        .read_i32()
        .await
        .map_err(|e| format!("read failed inside a frame: {e}"))?;
    let FrameBound {
        max,
        api_key,
        charge_to,
    } = bound(correlation_id);
    if length > max {
        let reason = format!(
            "a response of {length} bytes to {} (correlation id {correlation_id}) is over its \
             bound of {max} bytes",
            api_key.map_or_else(|| "no waiting request".to_string(), |k| format!("{k:?}"))
        );
        if oversized_warning_due() {
            warn!(
                "{reason}: closing the connection unread (a ShareFetch may return \
                 fetch.max.bytes of records: a topic whose batches are larger needs \
                 fetch.max.bytes raised to its max.message.bytes); further such responses \
                 are logged at DEBUG for a minute"
            );
        } else {
            debug!("{reason}: closing the connection unread");
        }
        return Err(reason);
    }
    let charge = match charge_to {
        Some(member) => MemoryCharge::for_frame(member, length),
        None => MemoryCharge::default(),
    };
    let mut frame = BytesMut::with_capacity(length.min(FRAME_PREALLOCATION));
    frame.put_i32(correlation_id);
    read_rest(socket, &mut frame, length).await?;
    Ok(Some((frame, charge)))
}

/// Whether an oversized response is worth a WARN now: one a minute, for the whole process (a
/// member reconnects and fetches again every half second, and would meet the same batch).
fn oversized_warning_due() -> bool {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let mut last = LAST.lock().expect("oversized warning time");
    let now = Instant::now();
    if last.is_some_and(|at| now.duration_since(at) < Duration::from_secs(60)) {
        return false;
    }
    *last = Some(now);
    true
}

/// Splits a response frame into its correlation id and the body after the response header.
pub(crate) fn split_response(
    frame: BytesMut,
    response_header_version: i16,
) -> Result<(i32, Bytes), EngineError> {
    let mut frame = frame.freeze();
    let correlation_id = wire::get_i32(&mut frame)?;
    if response_header_version >= 1 {
        wire::skip_tagged_fields(&mut frame)?;
    }
    Ok((correlation_id, frame))
}

async fn read_loop(socket: ReadHalf, wire: Arc<Wire>) {
    let mut socket = BufReader::with_capacity(64 * 1024, socket);
    let mut shut = wire.shut.subscribe();
    let reason = loop {
        let frame = tokio::select! {
            // Closed elsewhere (a timeout, the owner): a half-read frame does not matter then.
            _ = shut.wait_for(|s| *s) => return,
            frame = read_response(&mut socket, |correlation_id| {
                let pending = wire.pending.lock().expect("pending table");
                pending.waiting.get(&correlation_id).map_or(
                    FrameBound::uncharged(RESPONSE_MAX_BYTES, None),
                    |w| FrameBound {
                        max: w.max_response,
                        api_key: Some(w.api_key),
                        charge_to: w.charge_to.clone(),
                    },
                )
            }) => match frame {
                Ok(Some(frame_and_charge)) => frame_and_charge,
                Ok(None) => break "closed by broker".to_string(),
                Err(reason) => break reason,
            },
        };
        // read_response guarantees at least the 4 bytes of the correlation id.
        let (frame, charge) = frame;
        let correlation_id = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let waiting = wire
            .pending
            .lock()
            .expect("pending table")
            .waiting
            .remove(&correlation_id);
        let Some(waiting) = waiting else {
            // The caller gave up (dropped future): nothing to deliver.
            trace!(addr = %wire.addr, correlation_id, "response without a waiting caller");
            continue;
        };
        let result =
            split_response(frame, waiting.response_header_version).map(|(_, body)| (body, charge));
        let _ = waiting.reply.send(result);
    };
    debug!(addr = %wire.addr, %reason, "connection ended");
    wire.close(&reason, None);
}

/// The response to a request queued by [`Connection::send_raw`]: its body.
pub struct ResponseFuture {
    addr: String,
    response: oneshot::Receiver<Result<(Bytes, MemoryCharge), EngineError>>,
}

impl ResponseFuture {
    /// The response with what its bytes were charged to the member named when it was sent.
    pub(crate) fn charged(self) -> ChargedResponseFuture {
        ChargedResponseFuture(self)
    }

    fn poll_charged(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(Bytes, MemoryCharge), EngineError>> {
        std::future::Future::poll(std::pin::Pin::new(&mut self.response), cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(EngineError::ConnectionLost {
                    addr: self.addr.clone(),
                    reason: "connection dropped".into(),
                })
            })
        })
    }
}

impl std::future::Future for ResponseFuture {
    type Output = Result<Bytes, EngineError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // A charge nobody asked for holds nothing; dropping it gives nothing back.
        self.poll_charged(cx).map(|r| r.map(|(body, _)| body))
    }
}

/// [`ResponseFuture::charged`]: the body and the charge that holds its bytes.
pub(crate) struct ChargedResponseFuture(ResponseFuture);

impl std::future::Future for ChargedResponseFuture {
    type Output = Result<(Bytes, MemoryCharge), EngineError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        self.0.poll_charged(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A broker that accepts connections and never answers (a blackholed peer): each accepted
    /// socket is handed back so the test can see when the client closes it.
    async fn silent_broker() -> (String, mpsc::UnboundedReceiver<TcpStream>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                if tx.send(socket).is_err() {
                    return;
                }
            }
        });
        (addr, rx)
    }

    /// Reads (and discards) what the client sends until it closes the socket.
    async fn until_closed(mut socket: TcpStream) {
        let mut buf = [0u8; 1024];
        while socket.read(&mut buf).await.is_ok_and(|n| n > 0) {}
    }

    #[tokio::test]
    async fn a_request_without_answer_times_out_and_closes_the_connection() {
        let (addr, mut accepted) = silent_broker().await;
        let timeout = Duration::from_millis(300);
        let conn = Connection::connect(&addr, "t", timeout).await.unwrap();
        let peer = accepted.recv().await.unwrap();
        let started = Instant::now();
        let first = conn.send_raw(ApiKey::Metadata, 12, b"x").unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Pipelined behind the first: it fails with it, before its own deadline.
        let second = conn.send_raw(ApiKey::Metadata, 12, b"y").unwrap();
        let err = first.await.unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, EngineError::Timeout { .. }), "{err}");
        assert!(
            took >= timeout && took < timeout * 5,
            "timed out after {took:?}"
        );
        let err = second.await.unwrap_err();
        assert!(
            matches!(err, EngineError::ConnectionLost { .. }),
            "the other waiting request: {err}"
        );
        assert!(
            started.elapsed() < Duration::from_millis(100) + timeout,
            "the second request waited for its own deadline"
        );
        // Never reused, and the socket is really closed: the peer reads EOF.
        assert!(conn.is_closed());
        assert!(conn.send_raw(ApiKey::Metadata, 12, b"z").is_err());
        tokio::time::timeout(Duration::from_secs(5), until_closed(peer))
            .await
            .expect("the timed-out connection's socket was not closed");
    }

    #[tokio::test]
    async fn a_long_poll_gets_its_wait_on_top_of_the_request_timeout() {
        let (addr, mut accepted) = silent_broker().await;
        let timeout = Duration::from_millis(200);
        let conn = Connection::connect(&addr, "t", timeout).await.unwrap();
        let _peer = accepted.recv().await.unwrap();
        let started = Instant::now();
        let fetch = conn
            .send_raw_waiting(ApiKey::ShareFetch, 1, b"x", Duration::from_millis(400))
            .unwrap();
        let err = fetch.await.unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, EngineError::Timeout { .. }), "{err}");
        assert!(
            took >= Duration::from_millis(600),
            "a ShareFetch waiting 400 ms timed out after {took:?}"
        );
    }

    #[tokio::test]
    async fn an_answered_request_does_not_close_the_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            // Answers each request with an empty body after its correlation id.
            while let Ok(Some(frame)) = read_frame(&mut socket).await {
                // header v1: api key, version, correlation id, ...
                let correlation = &frame[4..8];
                let mut out = BytesMut::new();
                out.put_i32(5);
                out.put_slice(correlation);
                out.put_u8(0); // no tagged fields (response header v1)
                socket.write_all(&out).await.unwrap();
            }
        });
        let timeout = Duration::from_millis(300);
        let conn = Connection::connect(&addr, "t", timeout).await.unwrap();
        for _ in 0..3 {
            conn.request_raw(ApiKey::Metadata, 12, b"x").await.unwrap();
        }
        // Past every deadline: nothing left to time out.
        tokio::time::sleep(timeout * 2).await;
        assert!(!conn.is_closed());
        conn.request_raw(ApiKey::Metadata, 12, b"x").await.unwrap();
    }

    /// A broker that answers each request with a frame whose length field says `claimed` bytes
    /// but sends only the correlation id and `sent` bytes of it, then holds the socket open.
    async fn lying_broker(claimed: i32, sent: usize) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut held = Vec::new();
            while let Ok(Some(frame)) = read_frame(&mut socket).await {
                let mut out = BytesMut::new();
                out.put_i32(claimed);
                out.put_slice(&frame[4..8]); // the request's correlation id
                out.put_bytes(0, sent);
                socket.write_all(&out).await.unwrap();
                held.push(frame);
            }
            // Never closes on its own: a reader waiting for the rest would wait for good.
            std::future::pending::<()>().await;
        });
        addr
    }

    #[tokio::test]
    async fn a_frame_is_charged_to_its_member_before_its_bytes_arrive() {
        use crate::memory::MemoryPool;
        let pool = MemoryPool::new(64 << 20);
        let member = MemberMemory::new(16 << 20, pool.clone());
        let (mut broker, mut client) = tokio::io::duplex(64 * 1024);
        let length = 4 + (1 << 20);
        broker.write_i32(length as i32).await.unwrap();
        broker.write_i32(7).await.unwrap();
        broker.write_all(&[0u8; 1000]).await.unwrap();
        let charged = member.clone();
        let bound = move |correlation_id| FrameBound {
            max: 2 << 20,
            api_key: Some(ApiKey::ShareFetch),
            charge_to: (correlation_id == 7).then(|| charged.clone()),
        };
        let reading = tokio::spawn(async move {
            let read = read_response(&mut client, bound).await;
            (read, client)
        });
        // A thousand bytes of the megabyte are there: the whole frame is charged already.
        tokio::time::timeout(Duration::from_secs(5), async {
            while member.used() != length {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the frame was not charged while it was read");
        assert_eq!(pool.used(), length);
        broker
            .write_all(&vec![0u8; (1 << 20) - 1000])
            .await
            .unwrap();
        let (read, _client) = reading.await.unwrap();
        let (frame, charge) = read.unwrap().expect("a frame");
        assert_eq!((frame.len(), charge.bytes()), (length, length));
        drop(frame);
        drop(charge);
        assert_eq!((member.used(), pool.used()), (0, 0));
    }

    #[tokio::test]
    async fn a_response_over_its_bound_closes_the_connection_before_it_is_read() {
        let addr = lying_broker(256 * 1024 * 1024, 1000).await;
        let conn = Connection::connect(&addr, "t", Duration::from_secs(60))
            .await
            .unwrap();
        let fetch = conn
            .send_raw_bounded(
                ApiKey::ShareFetch,
                1,
                b"x",
                Duration::ZERO,
                1024 * 1024,
                None,
            )
            .unwrap();
        // Refused on its length: well before the request's own 60 s deadline, and without
        // waiting for the 256 MiB the broker claims.
        let err = tokio::time::timeout(Duration::from_secs(10), fetch)
            .await
            .expect("the oversized response was waited for")
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, EngineError::ConnectionLost { .. })
                && text.contains("268435456 bytes to ShareFetch")
                && text.contains("over its bound of 1048576 bytes"),
            "{text}"
        );
        assert!(conn.is_closed());
    }

    #[tokio::test]
    async fn a_larger_response_bound_takes_a_larger_response() {
        let length = RESPONSE_MAX_BYTES + (4 << 20);
        let addr = lying_broker(length as i32, length - 4).await;
        let conn = Connection::connect(&addr, "t", Duration::from_secs(60))
            .await
            .unwrap();
        conn.set_response_max_bytes(32 << 20);
        let body = tokio::time::timeout(
            Duration::from_secs(30),
            conn.request_raw(ApiKey::Metadata, 12, b"x"),
        )
        .await
        .expect("the response was read")
        .expect("within share.response.max.bytes");
        assert_eq!(
            body.len(),
            length - 5,
            "less the correlation id and the tag byte"
        );
    }

    #[tokio::test]
    async fn every_other_response_has_the_default_bound() {
        let addr = lying_broker(RESPONSE_MAX_BYTES as i32 + 1, 0).await;
        let conn = Connection::connect(&addr, "t", Duration::from_secs(60))
            .await
            .unwrap();
        let err = tokio::time::timeout(
            Duration::from_secs(10),
            conn.request_raw(ApiKey::Metadata, 12, b"x"),
        )
        .await
        .expect("the oversized response was waited for")
        .unwrap_err();
        assert!(err.to_string().contains("to Metadata"), "{err}");
    }

    #[tokio::test]
    async fn broker_sockets_have_tcp_keepalive() {
        let (addr, _accepted) = silent_broker().await;
        let stream = tcp_connect(&addr).await.unwrap();
        let sock = socket2::SockRef::from(&stream);
        assert!(sock.keepalive().unwrap(), "SO_KEEPALIVE is off");
        assert!(stream.nodelay().unwrap());
    }
}
