//! One TCP connection to one broker: length-prefixed framing, request headers, correlation ids.
//!
//! Requests may be pipelined: each caller registers its correlation id before its frame is
//! queued, a writer task sends frames in order, and a reader task routes each response to its
//! caller. Frames go through a channel so that a caller dropping its future mid-request can
//! never leave half a frame on the wire. Dropping the connection closes the socket, which is
//! what ends the broker-side share sessions bound to it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Encodable, Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tracing::{debug, trace};

use crate::error::EngineError;
use crate::protocol::{response_schema, wire};
use crate::security::{self, Security};

type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// Largest response frame accepted; the broker caps fetches at about 55 MiB.
const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

type Reply = oneshot::Sender<Result<Bytes, EngineError>>;

struct Waiting {
    response_header_version: i16,
    reply: Reply,
}

#[derive(Default)]
struct PendingTable {
    /// Set once the connection is unusable; later requests fail with this reason.
    closed: Option<String>,
    waiting: HashMap<i32, Waiting>,
}

impl PendingTable {
    fn fail_all(&mut self, addr: &str, reason: &str) {
        if self.closed.is_none() {
            self.closed = Some(reason.to_string());
        }
        for (_, w) in self.waiting.drain() {
            let _ = w.reply.send(Err(EngineError::ConnectionLost {
                addr: addr.to_string(),
                reason: reason.to_string(),
            }));
        }
    }
}

pub struct Connection {
    addr: String,
    client_id: Option<StrBytes>,
    next_correlation_id: AtomicI32,
    frames: mpsc::UnboundedSender<Bytes>,
    pending: Arc<Mutex<PendingTable>>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Connection {
    /// Opens a plaintext TCP connection to `addr` ("host:port").
    pub async fn connect(
        addr: &str,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Connection, EngineError> {
        Self::connect_with(addr, client_id, timeout, &Security::plaintext()).await
    }

    /// Opens a connection to `addr` ("host:port"): TCP, then TLS and SASL as `security` says.
    pub async fn connect_with(
        addr: &str,
        client_id: &str,
        timeout: Duration,
        security: &Security,
    ) -> Result<Connection, EngineError> {
        let work = async {
            let conn = Self::open(addr, client_id, security).await?;
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
        security: &Security,
    ) -> Result<Connection, EngineError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|source| EngineError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
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
        let pending = Arc::new(Mutex::new(PendingTable::default()));
        let (frames, frame_rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_loop(addr.to_string(), read_half, pending.clone()));
        let writer = tokio::spawn(write_loop(
            addr.to_string(),
            write_half,
            frame_rx,
            pending.clone(),
        ));
        debug!(addr, "connected");
        Ok(Connection {
            addr: addr.to_string(),
            client_id: Some(StrBytes::from_string(client_id.to_string())),
            next_correlation_id: AtomicI32::new(1),
            frames,
            pending,
            reader,
            writer,
        })
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn is_closed(&self) -> bool {
        self.pending.lock().expect("pending table").closed.is_some()
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
    /// epochs rely on) and returns a future of the response body after its header.
    pub fn send_raw(
        &self,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
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

        let (reply, response) = oneshot::channel();
        {
            let mut pending = self.pending.lock().expect("pending table");
            if let Some(reason) = &pending.closed {
                return Err(EngineError::ConnectionLost {
                    addr: self.addr.clone(),
                    reason: reason.clone(),
                });
            }
            pending.waiting.insert(
                correlation_id,
                Waiting {
                    response_header_version: api_key.response_header_version(version),
                    reply,
                },
            );
            trace!(addr = %self.addr, ?api_key, version, correlation_id, bytes = frame.len(), "send");
            // Queued under the table lock so that frame order equals call order.
            if self.frames.send(frame.freeze()).is_err() {
                pending.waiting.remove(&correlation_id);
                return Err(self.lost("writer stopped"));
            }
        }
        Ok(ResponseFuture {
            addr: self.addr.clone(),
            response,
        })
    }

    fn lost(&self, reason: &str) -> EngineError {
        EngineError::ConnectionLost {
            addr: self.addr.clone(),
            reason: reason.to_string(),
        }
    }
}

async fn write_loop(
    addr: String,
    mut socket: WriteHalf,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    pending: Arc<Mutex<PendingTable>>,
) {
    while let Some(frame) = frames.recv().await {
        // TLS buffers records inside the session: flush so that each frame leaves now.
        if let Err(e) = async {
            socket.write_all(&frame).await?;
            socket.flush().await
        }
        .await
        {
            debug!(%addr, error = %e, "write failed");
            pending
                .lock()
                .expect("pending table")
                .fail_all(&addr, &format!("write failed: {e}"));
            return;
        }
    }
}

/// Bytes reserved for a frame before any of its body arrived; beyond this, memory grows with
/// the data actually received, so a lying length field cannot reserve much.
pub(crate) const FRAME_PREALLOCATION: usize = 8 * 1024 * 1024;

/// Reads one length-prefixed frame (without its length). `Ok(None)`: the stream ended cleanly
/// before a new frame.
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
    while frame.len() < length {
        let missing = length - frame.len();
        if frame.len() == frame.capacity() {
            // At most double what has arrived, never past the frame's end.
            frame.reserve(missing.min(frame.len()));
        }
        let n = (&mut *socket)
            .take(missing as u64)
            .read_buf(&mut frame)
            .await
            .map_err(|e| format!("read failed: {e}"))?;
        if n == 0 {
            return Err(format!(
                "closed by broker inside a frame ({} of {length} bytes)",
                frame.len()
            ));
        }
    }
    Ok(Some(frame))
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

async fn read_loop(addr: String, socket: ReadHalf, pending: Arc<Mutex<PendingTable>>) {
    let mut socket = BufReader::with_capacity(64 * 1024, socket);
    let reason = loop {
        let frame = match read_frame(&mut socket).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break "closed by broker".to_string(),
            Err(reason) => break reason,
        };
        // read_frame guarantees at least the 4 bytes of the correlation id.
        let correlation_id = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        let waiting = pending
            .lock()
            .expect("pending table")
            .waiting
            .remove(&correlation_id);
        let Some(waiting) = waiting else {
            // The caller gave up (timeout or dropped future): nothing to deliver.
            trace!(%addr, correlation_id, "response without a waiting caller");
            continue;
        };
        let result = split_response(frame, waiting.response_header_version).map(|(_, body)| body);
        let _ = waiting.reply.send(result);
    };
    debug!(%addr, %reason, "connection ended");
    pending
        .lock()
        .expect("pending table")
        .fail_all(&addr, &reason);
}

/// The response to a request queued by [`Connection::send_raw`].
pub struct ResponseFuture {
    addr: String,
    response: oneshot::Receiver<Result<Bytes, EngineError>>,
}

impl std::future::Future for ResponseFuture {
    type Output = Result<Bytes, EngineError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.response).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(EngineError::ConnectionLost {
                    addr: self.addr.clone(),
                    reason: "connection dropped".into(),
                })
            })
        })
    }
}
