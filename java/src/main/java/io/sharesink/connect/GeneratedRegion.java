package io.sharesink.connect;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The part of a Markdown document that a generator owns, between the lines {@code begin} and {@code
 * end}; prose outside it is written by hand. The reference generators ({@link ConfigReference},
 * {@code ordering.OrderingReference}) write theirs through it, and their tests regenerate and
 * compare, so the document cannot go stale.
 */
public record GeneratedRegion(String begin, String end) {

  /** {@code document} with this region holding {@code generated} (one blank line either side). */
  public String replaceIn(String document, String generated) {
    int from = document.indexOf(begin);
    int to = document.indexOf(end);
    if (from < 0 || to < from) {
      throw new IllegalArgumentException(
          "the document has no " + begin + " ... " + end + " region");
    }
    return document.substring(0, from + begin.length())
        + "\n\n"
        + generated.strip()
        + "\n\n"
        + document.substring(to);
  }

  /** Rewrites this region of the file at {@code path}. */
  public void update(Path path, String generated) throws IOException {
    String document = Files.readString(path, StandardCharsets.UTF_8);
    Files.writeString(path, replaceIn(document, generated), StandardCharsets.UTF_8);
  }

  /** {@code text} fit for one cell of a Markdown table. */
  public static String cell(String text) {
    return text.replace("|", "\\|").replace("\n", " ");
  }
}
