// Curator's side of the revocation tests (recipes_test/revoke_test.go).
//
// Args: revoke servers nodePath
//   Curator's Revoker.attemptRevoke on the node; prints "revoked", or
//   "noauth" when the server refused the write (a sealed node).
// Args: hold servers lockPath
//   InterProcessMutex with makeRevocable: acquires, prints "acquired",
//   waits for its RevocationListener (at most 60 s), prints
//   "revoke-requested", releases, prints "released".
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;

public class CuratorRevoke {
  public static void main(String[] a) throws Exception {
    CuratorFramework cf = CuratorFrameworkFactory.newClient(a[1], 30000, 15000, new ExponentialBackoffRetry(100, 5));
    cf.start();
    cf.blockUntilConnected();
    try {
      if (a[0].equals("revoke")) {
        try {
          Revoker.attemptRevoke(cf, a[2]);
          System.out.println("revoked");
        } catch (KeeperException.NoAuthException e) {
          System.out.println("noauth");
        }
        return;
      }
      InterProcessMutex m = new InterProcessMutex(cf, a[2]);
      CountDownLatch asked = new CountDownLatch(1);
      m.makeRevocable(lock -> asked.countDown());
      m.acquire();
      System.out.println("acquired");
      System.out.flush();
      if (asked.await(60, TimeUnit.SECONDS)) {
        System.out.println("revoke-requested");
      }
      m.release();
      System.out.println("released");
    } finally {
      System.out.flush();
      cf.close();
    }
  }
}
