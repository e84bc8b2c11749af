package io.sharesink.connect.rest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import io.sharesink.connect.ShareSinkConnector;
import org.junit.jupiter.api.Test;

/** The response rewrites on the JSON the worker writes (shapes of Connect 4.4's entities). */
class ShareModeResponseFilterTest {

  private static JsonNode json(String text) throws Exception {
    return RestJson.MAPPER.readTree(text.replace('\'', '"'));
  }

  private static final String STORED_CONFIG =
      "{'name':'orders','connector.class':'io.sharesink.connect.ShareSinkConnector',"
          + "'share.sink.connector.class':'FileStreamSink','share.internal.form':'flag',"
          + "'share.internal.form.flag':'share','topics':'orders'}";

  private static final String OPERATOR_CONFIG =
      "{'name':'orders','connector.class':'FileStreamSink',"
          + "'consumer.override.group.protocol':'share','topics':'orders'}";

  @Test
  void connectorInfoShowsTheOperatorsConfigAndTypeSink() throws Exception {
    JsonNode info =
        json(
            "{'name':'orders','config':"
                + STORED_CONFIG
                + ",'tasks':[{'connector':'orders','task':0}],'type':'source'}");
    JsonNode restored = ShareModeResponseFilter.connectorInfo(info);
    assertEquals(
        json(
            "{'name':'orders','config':"
                + OPERATOR_CONFIG
                + ",'tasks':[{'connector':'orders','task':0}],'type':'sink'}"),
        restored);
    // Restoring twice (the follower passing on the leader's answer) changes nothing more.
    assertNull(ShareModeResponseFilter.connectorInfo(restored.deepCopy()));
    // The explicit ShareSinkConnector form is shown as it is stored.
    assertNull(
        ShareModeResponseFilter.connectorInfo(
            json(
                "{'name':'x','config':{'connector.class':'io.sharesink.connect.ShareSinkConnector',"
                    + "'share.sink.connector.class':'FileStreamSink'},'tasks':[],'type':'source'}")));
  }

  @Test
  void configIsTheMapTheOperatorWrote() throws Exception {
    assertEquals(json(OPERATOR_CONFIG), ShareModeResponseFilter.config(json(STORED_CONFIG)));
    assertNull(ShareModeResponseFilter.config(json(OPERATOR_CONFIG)));
  }

  @Test
  void validationReportsOnTheOperatorsKeys() throws Exception {
    JsonNode result =
        json(
            "{'name':'"
                + ShareSinkConnector.class.getName()
                + "','error_count':3,'groups':['Common'],'configs':["
                + "{'definition':{'name':'connector.class'},'value':{'name':'connector.class',"
                + "'value':'io.sharesink.connect.ShareSinkConnector','recommended_values':[],"
                + "'errors':[],'visible':true}},"
                + "{'definition':{'name':'share.sink.connector.class'},'value':{'name':"
                + "'share.sink.connector.class','value':'FileStreamSink','recommended_values':[],"
                + "'errors':['native library missing'],'visible':true}},"
                + "{'definition':null,'value':{'name':'share.internal.form','value':'flag',"
                + "'recommended_values':[],'errors':[],'visible':true}},"
                + "{'definition':{'name':'share.commit.interval.ms'},'value':{'name':"
                + "'share.commit.interval.ms','value':'20000','recommended_values':[],"
                + "'errors':['too close to the lock','x'],'visible':true}}]}");
    JsonNode shown = ShareModeResponseFilter.validation(result, "FileStreamSink");
    assertEquals("FileStreamSink", shown.get("name").asText());
    assertEquals(3, shown.get("error_count").asInt());
    assertEquals(2, shown.get("configs").size());
    JsonNode connectorClass = shown.get("configs").get(0).get("value");
    assertEquals("FileStreamSink", connectorClass.get("value").asText());
    assertEquals(json("['native library missing']"), connectorClass.get("errors"));
    assertEquals(
        "share.commit.interval.ms", shown.get("configs").get(1).get("value").get("name").asText());
  }
}
