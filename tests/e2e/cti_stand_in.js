// A stand-in for xuc's `cti.js`, of svc's own writing (tests/e2e/cti_js_browser_test.ts loads it
// when SVC_TEST_CTI_JS names no copy of the real file). It offers the same global `Cti`: the
// command functions, `Cti.WebsocketMessageFactory` and `Cti.MessageType`, each command sending the
// message docs/cti.md documents for it. Handlers are kept per message type, without jQuery.
(function () {
  "use strict";
  const handlers = new Map();
  const web = (command, fields) => Object.assign({ claz: "web", command }, fields);
  // function name -> the message it sends, from its arguments
  const commands = {
    sendPing: () => ({ claz: "ping" }),
    changeUserStatus: (status) => web("userStatusUpdate", { status }),
    loginAgent: (agentphonenumber, agentid) => web("agentLogin", { agentphonenumber, agentid }),
    logoutAgent: (agentid) => web("agentLogout", { agentid }),
    pauseAgent: (agentid, reason) =>
      web("pauseAgent", reason === undefined ? { agentid } : { agentid, reason }),
    unpauseAgent: (agentid) => web("unpauseAgent", { agentid }),
    listenAgent: (agentid) => web("listenAgent", { agentid }),
    dnd: (state) => web("dnd", { state }),
    dial: (destination, variables) => web("dial", { destination, variables }),
    dialFromMobile: (destination, variables) => web("dialFromMobile", { destination, variables }),
    dialFromQueue: (destination, queueId, callerIdName, callerIdNumber, variables) =>
      web("dialFromQueue", {
        destination,
        queueId: parseInt(queueId, 10),
        callerIdName,
        callerIdNumber,
        variables,
      }),
    originate: (destination) => web("originate", { destination }),
    hangup: () => web("hangup"),
    answer: () => web("answer"),
    hold: () => web("hold"),
    directTransfer: (destination) => web("directTransfer", { destination }),
    attendedTransfer: (destination) => web("attendedTransfer", { destination }),
    completeTransfer: () => web("completeTransfer"),
    cancelTransfer: () => web("cancelTransfer"),
    conference: () => web("conference"),
    conferenceMute: (numConf, index) => web("conferenceMute", { numConf, index }),
    conferenceUnmute: (numConf, index) => web("conferenceUnmute", { numConf, index }),
    conferenceMuteAll: (numConf) => web("conferenceMuteAll", { numConf }),
    conferenceUnmuteAll: (numConf) => web("conferenceUnmuteAll", { numConf }),
    conferenceMuteMe: (numConf) => web("conferenceMuteMe", { numConf }),
    conferenceUnmuteMe: (numConf) => web("conferenceUnmuteMe", { numConf }),
    conferenceKick: (numConf, index) => web("conferenceKick", { numConf, index }),
    subscribeToQueueStats: () => web("subscribeToQueueStats"),
    subscribeToQueueCalls: (queueId) => web("subscribeToQueueCalls", { queueId }),
    unSubscribeToQueueCalls: (queueId) => web("unSubscribeToQueueCalls", { queueId }),
    subscribeToAgentStats: () => web("subscribeToAgentStats"),
    getQueueStatistics: (queueId, window, xqos) =>
      web("getQueueStatistics", { queueId, window, xqos }),
    subscribeToAgentEvents: () => web("subscribeToAgentEvents"),
    getAgentStates: () => web("getAgentStates"),
    getConfig: (objectType) => web("getConfig", { objectType }),
    getList: (objectType) => web("getList", { objectType }),
    getAgentDirectory: () => web("getAgentDirectory"),
    getConferenceRooms: () => web("getList", { objectType: "meetme" }),
    setAgentQueue: (agentId, queueId, penalty) =>
      web("setAgentQueue", { agentId, queueId, penalty }),
    removeAgentFromQueue: (agentId, queueId) => web("removeAgentFromQueue", { agentId, queueId }),
    moveAgentsInGroup: (groupId, fromQueueId, fromPenalty, toQueueId, toPenalty) =>
      web("moveAgentsInGroup", { groupId, fromQueueId, fromPenalty, toQueueId, toPenalty }),
    addAgentsInGroup: (groupId, fromQueueId, fromPenalty, toQueueId, toPenalty) =>
      web("addAgentsInGroup", { groupId, fromQueueId, fromPenalty, toQueueId, toPenalty }),
    removeAgentGroupFromQueueGroup: (groupId, queueId, penalty) =>
      web("removeAgentGroupFromQueueGroup", { groupId, queueId, penalty }),
    addAgentsNotInQueueFromGroupTo: (groupId, queueId, penalty) =>
      web("addAgentsNotInQueueFromGroupTo", { groupId, queueId, penalty }),
    monitorPause: (agentid) => web("monitorPause", { agentid }),
    monitorUnpause: (agentid) => web("monitorUnpause", { agentid }),
    inviteConferenceRoom: (userId) => web("inviteConferenceRoom", { userId }),
    naFwd: (destination, state) => web("naFwd", { state, destination }),
    uncFwd: (destination, state) => web("uncFwd", { state, destination }),
    busyFwd: (destination, state) => web("busyFwd", { state, destination }),
    getAgentCallHistory: (size) => web("getAgentCallHistory", { size }),
    findCustomerCallHistory: (id, filters, size) =>
      web("findCustomerCallHistory", { id, request: { filters, size } }),
    getUserCallHistory: (size) => web("getUserCallHistory", { size }),
    getUserCallHistoryByDays: (days) => web("getUserCallHistoryByDays", { days }),
    getQueueCallHistory: (queue, size) => web("getQueueCallHistory", { queue, size }),
    setAgentGroup: (agentId, groupId) => web("setAgentGroup", { agentId, groupId }),
    directoryLookUp: (term) => web("directoryLookUp", { term }),
    getFavorites: () => web("getFavorites"),
    addFavorite: (contactId, source) => web("addFavorite", { contactId, source }),
    removeFavorite: (contactId, source) => web("removeFavorite", { contactId, source }),
    setData: (variables) => web("setData", { variables }),
    getCurrentCallsPhoneEvents: () => web("getCurrentCallsPhoneEvents"),
    sendDtmf: (key) => web("sendDtmf", { key }),
    sendFlashTextMessage: (to, sequence, message) =>
      web("flashTextBrowserRequest", {
        request: "FlashTextDirectMessage",
        sequence,
        to: { username: to },
        message,
      }),
    subscribeToPhoneHints: (phoneNumbers) => web("subscribeToPhoneHints", { phoneNumbers }),
    unsubscribeFromAllPhoneHints: () => web("unsubscribeFromAllPhoneHints"),
  };
  const messageTypes = [
    "Error",
    "LoggedOn",
    "Sheet",
    "UsersStatuses",
    "UserStatusUpdate",
    "UserConfigUpdate",
    "DirectoryResult",
    "PhoneStatusUpdate",
    "VoiceMailStatusUpdate",
    "LinkStatusUpdate",
    "QueueStatistics",
    "QueueConfig",
    "QueueList",
    "QueueMember",
    "QueueMemberList",
    "QueueCalls",
    "GetQueueStatistics",
    "AgentConfig",
    "AgentDirectory",
    "AgentError",
    "AgentList",
    "AgentListen",
    "AgentStatistics",
    "AgentGroupList",
    "AgentStateEvent",
    "ConferenceList",
    "ConferenceEvent",
    "ConferenceParticipantEvent",
    "ConferenceCommandError",
    "CallHistory",
    "CallHistoryByDays",
    "CustomerCallHistoryResponseWithId",
    "Favorites",
    "FavoriteUpdated",
    "PhoneEvent",
    "CurrentCallsPhoneEvents",
    "PhoneHintStatusEvent",
    "LineConfig",
    "AuthenticationToken",
    "RightProfile",
    "FlashTextEvent",
    "WebRTCCmd",
  ];
  const Cti = {
    MessageType: Object.fromEntries(messageTypes.map((type) => [type.toUpperCase(), type])),
    WebsocketMessageFactory: {
      createMessage: (command) => web(command),
      createPing: () => ({ claz: "ping" }),
    },
    sendCallback() {},
    setHandler(type, handler) {
      if (!handlers.has(type)) handlers.set(type, new Set());
      handlers.get(type).add(handler);
    },
    unsetHandler(type, handler) {
      handlers.get(type)?.delete(handler);
    },
    clearHandlers() {
      handlers.clear();
    },
    receive(event) {
      const { msgType, ctiMessage } = JSON.parse(event.data);
      for (const handler of handlers.get(msgType) ?? []) handler(ctiMessage);
    },
    close() {
      Cti.webSocket?.close();
    },
    WebSocket: {
      init(url, username, phoneNumber) {
        const socket = new WebSocket(url);
        const status = (value) => () =>
          Cti.receive({
            data: JSON.stringify({ msgType: "LinkStatusUpdate", ctiMessage: { status: value } }),
          });
        socket.onopen = status("opened");
        socket.onclose = status("closed");
        socket.onmessage = (event) => Cti.receive(event);
        Cti.username = username;
        Cti.agentNumber = phoneNumber;
        Cti.webSocket = socket;
        Cti.sendCallback = (message) => socket.send(JSON.stringify(message));
      },
    },
  };
  for (const [name, build] of Object.entries(commands)) {
    Cti[name] = function (...args) {
      Cti.sendCallback(build(...args));
    };
  }
  globalThis.Cti = Cti;
})();
