import com.sun.tools.attach.VirtualMachine;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Reads JMX attributes of every MBean matching a pattern in a running JVM of this machine,
 * through the attach API (the JVM needs no JMX port), and prints one line per MBean and
 * attribute: "name TAB attribute TAB value". One attach reads them all: each attach starts a JVM
 * and costs the target a little CPU, so the bench reads every counter it wants at once.
 *
 * <pre>JmxRead PID OBJECT_NAME_PATTERN[;OBJECT_NAME_PATTERN...] ATTRIBUTE [ATTRIBUTE ...]</pre>
 */
public final class JmxRead {
  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: JmxRead PID OBJECT_NAME_PATTERN ATTRIBUTE [ATTRIBUTE ...]");
      System.exit(2);
    }
    VirtualMachine vm = VirtualMachine.attach(args[0]);
    try {
      String address = vm.startLocalManagementAgent();
      try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
        MBeanServerConnection server = connector.getMBeanServerConnection();
        Set<ObjectName> names = new java.util.LinkedHashSet<>();
        for (String pattern : args[1].split(";")) {
          names.addAll(server.queryNames(new ObjectName(pattern), null));
        }
        for (ObjectName name : names) {
          for (int i = 2; i < args.length; i++) {
            try {
              System.out.println(name + "\t" + args[i] + "\t" + server.getAttribute(name, args[i]));
            } catch (javax.management.AttributeNotFoundException absent) {
              // an MBean of the pattern without this attribute: not ours to report
            }
          }
        }
      }
    } finally {
      vm.detach();
    }
  }
}
