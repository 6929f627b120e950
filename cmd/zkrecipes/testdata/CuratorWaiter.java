// A Curator contender for the zkrecipes command's tests: it takes
// Curator's InterProcessMutex at a path (or, with a lease count as the
// third argument, a lease of an InterProcessSemaphoreV2) and keeps it, or
// waits for it, until its input ends. Prints "acquired" if it gets it.
// Args: servers path [leases]
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.retry.RetryNTimes;

public class CuratorWaiter {
  public static void main(String[] a) throws Exception {
    CuratorFramework cf = CuratorFrameworkFactory.newClient(a[0], 8000, 5000, new RetryNTimes(100, 100));
    cf.start();
    cf.blockUntilConnected();
    Thread t = new Thread(() -> {
      try {
        if (a.length > 2) {
          new InterProcessSemaphoreV2(cf, a[1], Integer.parseInt(a[2])).acquire();
        } else {
          new InterProcessMutex(cf, a[1]).acquire();
        }
        System.out.println("acquired");
        System.out.flush();
      } catch (Exception e) {
        // closed: the test is over
      }
    });
    t.setDaemon(true);
    t.start();
    while (System.in.read() >= 0) {
    }
    cf.close();
  }
}
