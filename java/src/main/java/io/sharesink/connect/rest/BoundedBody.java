package io.sharesink.connect.rest;

import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import java.io.IOException;
import java.io.InputStream;

/**
 * Reads the body of a request the extension rewrites, never more than {@link #MAX_BYTES}.
 *
 * <p>The bound is the default {@code max.request.size} (1 MiB) of the producer that writes
 * Connect's config topic: a connector configuration larger than that cannot be stored anyway
 * (unless the worker raised {@code config.storage.producer.max.request.size}, and then the
 * extension still refuses it). The bytes are counted as they are read, so a missing, wrong or
 * unreadable Content-Length does not lift the bound.
 */
final class BoundedBody {

  static final int MAX_BYTES = 1 << 20;

  /** A body over the bound. */
  static final class TooLarge extends Exception {
    TooLarge(String message) {
      super(message);
    }
  }

  private BoundedBody() {}

  static byte[] read(ContainerRequestContext request) throws IOException, TooLarge {
    return read(request, MAX_BYTES);
  }

  static byte[] read(ContainerRequestContext request, int maxBytes) throws IOException, TooLarge {
    String declared = request.getHeaderString(HttpHeaders.CONTENT_LENGTH);
    if (declared != null) {
      try {
        if (Long.parseLong(declared.trim()) > maxBytes) {
          throw tooLarge(maxBytes); // refused unread
        }
      } catch (NumberFormatException e) {
        // not a length: the bytes read decide
      }
    }
    InputStream in = request.getEntityStream();
    byte[] body = in == null ? new byte[0] : in.readNBytes(maxBytes + 1);
    if (body.length > maxBytes) {
      throw tooLarge(maxBytes);
    }
    return body;
  }

  private static TooLarge tooLarge(int maxBytes) {
    return new TooLarge(
        "The request body is larger than "
            + maxBytes
            + " bytes, the most sharesink's REST extension reads (Connect's config topic stores"
            + " at most 1 MiB per connector configuration by default)");
  }
}
