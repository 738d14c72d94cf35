// A stub of the few UnityEngine members the sample (package/Samples~/Chat)
// uses, with Unity's signatures, so the build checks the sample's use of the
// SDK. It checks nothing about Unity itself: in Unity the real UnityEngine is
// used and this file is not part of the package.
using System;

namespace UnityEngine
{
    public class Object { }
    public class Component : Object { public Transform transform { get { return null; } } }
    public class Behaviour : Component { public bool enabled { get; set; } }
    public class MonoBehaviour : Behaviour { }
    public class Transform : Component { public Vector3 position { get; set; } }
    public struct Vector3 { public float x, y, z; }
    public class SerializeField : Attribute { }
    public enum KeyCode { Space = 32 }
    public static class Input { public static bool GetKeyDown(KeyCode key) { return false; } }
    public static class Time { public static float time { get { return 0; } } }
    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogWarning(object message) { }
        public static void LogException(Exception exception) { }
    }
}

namespace AOT
{
    // Unity's attribute for static methods that native code (here the WebGL
    // jslib) calls back; the stub lets WebGLTransport.cs compile here.
    [AttributeUsage(AttributeTargets.Method)]
    public class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type type) { }
    }
}
