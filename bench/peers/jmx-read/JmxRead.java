import com.sun.tools.attach.VirtualMachine;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Reads one JMX attribute of every MBean matching a pattern in a running JVM of this machine,
 * through the attach API (the JVM needs no JMX port), and prints one line per MBean: "name value".
 * The bench reads the worker's sharesink metrics with it.
 *
 * <pre>JmxRead PID OBJECT_NAME_PATTERN ATTRIBUTE</pre>
 */
public final class JmxRead {
  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: JmxRead PID OBJECT_NAME_PATTERN ATTRIBUTE");
      System.exit(2);
    }
    VirtualMachine vm = VirtualMachine.attach(args[0]);
    try {
      String address = vm.startLocalManagementAgent();
      try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
        MBeanServerConnection server = connector.getMBeanServerConnection();
        Set<ObjectName> names = server.queryNames(new ObjectName(args[1]), null);
        for (ObjectName name : names) {
          try {
            System.out.println(name + " " + server.getAttribute(name, args[2]));
          } catch (javax.management.AttributeNotFoundException absent) {
            // an MBean of the pattern without this attribute: not ours to report
          }
        }
      }
    } finally {
      vm.detach();
    }
  }
}
